package main

import (
	"github.com/planrunner/runner/agents"
	"github.com/planrunner/runner/plans"
	"github.com/rs/zerolog"
)

// The plan's agents are built before the first step runs, so a missing API
// key stops the run at once, naming the agent and the variable.
func init() {
	serviceHooks = append(serviceHooks, func(p *plans.Plan, log zerolog.Logger, s map[string]any) error {
		if len(p.Agents) == 0 {
			return nil
		}
		set, err := agents.New(p, agents.Options{Log: log})
		if err != nil {
			return err
		}
		s[agents.ServiceKey] = set
		return nil
	})
}
