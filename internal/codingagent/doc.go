// Package codingagent is what the coding_agent step needs around a
// coding-agent CLI (Claude Code, Codex) that it runs headless: the model
// proxy runner puts between the CLI and the model's API (it meters and
// records every exchange), the readers of the CLIs' event streams, and the
// diff of what the agent changed in the workspace. It may import agents
// (usage types), patch and the standard library; never engine or steps.
package codingagent
