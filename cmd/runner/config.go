package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/sys/readlimit"
)

// configEnv names the user's config file in place of the default one.
const configEnv = "RUNNER_CONFIG"

// userConfig is the user's runner config (docs/running.md): the
// retention policy of saved runs, and budgets for every plan
// (docs/cost.md).
type userConfig struct {
	Budgets yaml.Node `yaml:"budgets"`
	Runs    struct {
		Prune *struct {
			Keep      int      `yaml:"keep"`
			OlderThan string   `yaml:"older_than"`
			Status    []string `yaml:"status"`
		} `yaml:"prune"`
	} `yaml:"runs"`
}

// configPath is where the user's config is: $RUNNER_CONFIG, else
// runner/config.yaml in the user's config directory ($XDG_CONFIG_HOME or
// ~/.config on Linux).
func configPath() (string, error) {
	if p := os.Getenv(configEnv); p != "" {
		return p, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "runner", "config.yaml"), nil
}

// prunePolicy is the user's retention policy of saved runs; false when
// the config gives none (or there is no config).
func prunePolicy() (runs.PruneOptions, string, bool, error) {
	path, err := configPath()
	if err != nil {
		return runs.PruneOptions{}, "", false, nil
	}
	data, err := readlimit.File(path, readlimit.Plan)
	if errors.Is(err, os.ErrNotExist) {
		return runs.PruneOptions{}, path, false, nil
	}
	if err != nil {
		return runs.PruneOptions{}, path, false, err
	}
	var c userConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && len(bytes.TrimSpace(data)) > 0 {
		return runs.PruneOptions{}, path, false, fmt.Errorf("%s: %w", path, err)
	}
	p := c.Runs.Prune
	if p == nil {
		return runs.PruneOptions{}, path, false, nil
	}
	o := runs.PruneOptions{Keep: p.Keep, Status: p.Status}
	if p.OlderThan != "" {
		if o.OlderThan, err = parseAge(p.OlderThan); err != nil {
			return o, path, false, fmt.Errorf("%s: runs.prune.older_than: %w", path, err)
		}
	}
	if err := o.Check(); err != nil {
		return o, path, false, fmt.Errorf("%s: runs.prune: %w", path, err)
	}
	return o, path, true, nil
}

// parseAge reads an age: a Go duration (36h, 90m) or a number of days
// (30d).
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q: want a number of days (30d) or a duration (36h)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: want a number of days (30d) or a duration (36h)", s)
	}
	return d, nil
}

// userBudgets are the budgets of the user's config, for every plan; none
// when there is no config.
func userBudgets() ([]plans.Budget, error) {
	path, err := configPath()
	if err != nil {
		return nil, nil
	}
	data, err := readlimit.File(path, readlimit.Plan)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c userConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && len(bytes.TrimSpace(data)) > 0 {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Budgets.Kind == 0 {
		return nil, nil
	}
	r := &plans.Reporter{File: path}
	for _, f := range plans.Fields(r, &c.Budgets, "budgets") {
		if f.Key == "on_exceed" {
			r.At(f.KeyN, "budgets.on_exceed is the plan's choice: give it in the plan, not in the config")
		}
	}
	bs := plans.ParseBudgets(r, &c.Budgets)
	if err := r.Err(); err != nil {
		return nil, err
	}
	return bs.Limits, nil
}
