package agent_test

import (
	"os"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/agent"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// TestLiveModel runs the loop against a real model, only when
// AIRLOCK_LIVE_MODEL names one as PROVIDER:MODEL (openai:gpt-5.2,
// anthropic:claude-sonnet-4-5, openai:qwen3:8b with AIRLOCK_LIVE_BASE_URL
// for a local server). The key is read from OPENAI_API_KEY or
// ANTHROPIC_API_KEY. It never runs in CI: it reaches past loopback.
func TestLiveModel(t *testing.T) {
	live := os.Getenv("AIRLOCK_LIVE_MODEL")
	if live == "" {
		t.Skip("AIRLOCK_LIVE_MODEL is not set (PROVIDER:MODEL)")
	}
	provider, model, ok := strings.Cut(live, ":")
	if !ok || (provider != config.ProviderOpenAI && provider != config.ProviderAnthropic) || model == "" {
		t.Fatalf("AIRLOCK_LIVE_MODEL=%q: want openai:MODEL or anthropic:MODEL", live)
	}
	f := newFixture(t, provider, fixtureOptions{})
	var a config.Agent
	p, err := agent.NewProvider(agent.ProviderOptions{Name: provider, BaseURL: os.Getenv("AIRLOCK_LIVE_BASE_URL"),
		APIKey: os.Getenv(a.KeyEnv(provider))})
	if err != nil {
		t.Fatal(err)
	}
	ag, err := agent.New(agent.Options{Host: f.h, Provider: p, Model: model, Stream: true, Events: f.event, MaxSteps: 8})
	if err != nil {
		t.Fatal(err)
	}
	out := ag.Start(t.Context(), "Use the tools to read the file a.txt, then reply with its content and nothing else.")
	if out.Status != store.RunDone {
		t.Fatalf("outcome = %+v", out)
	}
	if !strings.Contains(strings.ToLower(out.Text), "alpha") {
		t.Errorf("the model answered %q, want a.txt's content (alpha)", out.Text)
	}
	if len(f.eventsOf(agent.EventToolCall)) == 0 {
		t.Error("the model answered without calling a tool")
	}
}
