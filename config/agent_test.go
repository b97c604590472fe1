package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAgent(t *testing.T) {
	agent := func(src string) Agent {
		t.Helper()
		cfg, err := Parse([]byte(server+src), "airlock.yaml", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Agent
	}
	system := "You review pull requests.\nNever write outside docs/.\n"
	for _, tc := range []struct {
		name, src string
		want      Agent
	}{
		// Left out, or empty: zero, which airlock run reads as the
		// defaults.
		{"left out", "", Agent{}},
		{"empty", "agent: {}\n", Agent{}},
		{"every key", "agent:\n  provider: openai\n  model: gpt-5.2\n  base_url: https://openrouter.ai/api/v1\n  api_key_env: OPENROUTER_API_KEY\n" +
			"  system: |\n    You review pull requests.\n    Never write outside docs/.\n  max_steps: 10000\n  max_tools_in_prompt: 1000\n",
			Agent{Provider: ProviderOpenAI, Model: "gpt-5.2", BaseURL: "https://openrouter.ai/api/v1", APIKeyEnv: "OPENROUTER_API_KEY",
				System: system, MaxSteps: 10000, MaxToolsInPrompt: 1000}},
		{"anthropic", "agent: {provider: anthropic, model: claude-sonnet-4-5}\n", Agent{Provider: ProviderAnthropic, Model: "claude-sonnet-4-5"}},
		{"the lower bounds", "agent: {max_steps: 1, max_tools_in_prompt: 1}\n", Agent{MaxSteps: 1, MaxToolsInPrompt: 1}},
		// A local server: plain http to loopback, a model name with a
		// colon, numbers taken as written.
		{"a local server", "agent:\n  base_url: http://127.0.0.1:11434/v1\n  model: qwen3:8b\n", Agent{BaseURL: "http://127.0.0.1:11434/v1", Model: "qwen3:8b"}},
		{"IPv6 loopback", "agent: {base_url: \"http://[::1]:8000\"}\n", Agent{BaseURL: "http://[::1]:8000"}},
		{"a plain http host on the network", "agent: {base_url: \"http://gpu-box.lan:8000/v1/\"}\n", Agent{BaseURL: "http://gpu-box.lan:8000/v1/"}},
		{"a model named by a number", "agent: {model: 4}\n", Agent{Model: "4"}},
		{"a variable in lower case", "agent: {api_key_env: my_key}\n", Agent{APIKeyEnv: "my_key"}},
		{"a variable in upper case that is long", "agent: {api_key_env: SK_OPENAI_API_KEY_FOR_THE_PRODUCTION_CLUSTER}\n",
			Agent{APIKeyEnv: "SK_OPENAI_API_KEY_FOR_THE_PRODUCTION_CLUSTER"}},
	} {
		if diff := cmp.Diff(tc.want, agent(tc.src)); diff != "" {
			t.Errorf("%s: Agent mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestAgentKeyEnv: the key is read from api_key_env, else from the
// provider's usual variable.
func TestAgentKeyEnv(t *testing.T) {
	for _, tc := range []struct {
		agent    Agent
		provider string
		want     string
	}{
		{Agent{}, ProviderOpenAI, "OPENAI_API_KEY"},
		{Agent{}, ProviderAnthropic, "ANTHROPIC_API_KEY"},
		{Agent{}, "", "OPENAI_API_KEY"},
		{Agent{APIKeyEnv: "LLM_KEY"}, ProviderOpenAI, "LLM_KEY"},
		{Agent{APIKeyEnv: "LLM_KEY"}, ProviderAnthropic, "LLM_KEY"},
	} {
		if got := tc.agent.KeyEnv(tc.provider); got != tc.want {
			t.Errorf("%+v.KeyEnv(%q) = %q, want %q", tc.agent, tc.provider, got, tc.want)
		}
	}
}

func TestParseAgentErrors(t *testing.T) {
	const (
		example  = "such as http://127.0.0.1:11434/v1 or https://openrouter.ai/api/v1"
		notAName = "airlock.yaml:5: agent.api_key_env: is not the name of an environment variable (letters, digits and _, not starting with a digit): " +
			"name the environment variable that holds the API key, such as OPENAI_API_KEY; the key itself never goes in this file"
		aKey = "airlock.yaml:5: agent.api_key_env: looks like an API key, not the name of a variable: the key never goes in this file; " +
			"set it in the environment and name the environment variable that holds the API key, such as OPENAI_API_KEY"
		noKeyHere = "an API key never goes in this file: set it in the environment (OPENAI_API_KEY or ANTHROPIC_API_KEY), " +
			"or name the variable that holds it with agent.api_key_env"
	)
	tests := []errorCase{
		// The section.
		{"not a mapping", server + "agent: openai\n", []string{
			"airlock.yaml:5: agent: must be a mapping (key: value lines), not a string"}},
		{"no value", server + "agent:\n", []string{
			"airlock.yaml:5: agent: has no value: give key: value lines, or remove the key"}},
		{"misspelt key", server + "agent: {max_step: 3}\n", []string{
			`airlock.yaml:5: agent.max_step: unknown key; did you mean "max_steps"?`}},
		{"misspelt key far", server + "agent: {temperature: 0}\n", []string{
			"airlock.yaml:5: agent.temperature: unknown key: expected one of provider, model, base_url, api_key_env, system, max_steps, max_tools_in_prompt"}},
		{"key of a server", server + "agent: {instructions: include}\n", []string{
			"airlock.yaml:5: agent.instructions: unknown key here: it belongs in a server entry under servers:"}},
		{"key of another section", server + "agent: {limits: {}}\n", []string{
			"airlock.yaml:5: agent.limits: unknown key here: it belongs at the top level"}},
		{"agent in a server entry", server + "    agent: {model: gpt-5.2}\n", []string{
			"airlock.yaml:5: servers[0].agent: unknown key here: it belongs at the top level"}},
		{"duplicate key", server + "agent:\n  model: a\n  model: b\n", []string{
			"airlock.yaml:7: agent.model: duplicate key (first set at line 6)"}},

		// Agent keys at the top level.
		{"agent keys at the top level", server + "provider: openai\nmodel: gpt-5.2\nbase_url: http://127.0.0.1:1/v1\napi_key_env: K\n" +
			"system: be brief\nmax_steps: 3\nmax_tools_in_prompt: 3\n", []string{
			"airlock.yaml:5: provider: unknown key here: it belongs under agent:",
			"airlock.yaml:6: model: unknown key here: it belongs under agent:",
			"airlock.yaml:7: base_url: unknown key here: it belongs under agent:",
			"airlock.yaml:8: api_key_env: unknown key here: it belongs under agent:",
			"airlock.yaml:9: system: unknown key here: it belongs under agent:",
			"airlock.yaml:10: max_steps: unknown key here: it belongs under agent:",
			"airlock.yaml:11: max_tools_in_prompt: unknown key here: it belongs under agent:"}},

		// An API key itself, where only its variable's name may be.
		{"api_key under agent", server + "agent: {api_key: sk-proj-Hunter2Hunter2Hunter2x}\n", []string{
			"airlock.yaml:5: agent.api_key: " + noKeyHere}},
		{"apiKey under agent", server + "agent: {apiKey: sk-proj-Hunter2Hunter2Hunter2x}\n", []string{
			"airlock.yaml:5: agent.apiKey: " + noKeyHere}},
		{"key under agent", server + "agent: {key: sk-proj-Hunter2Hunter2Hunter2x}\n", []string{
			"airlock.yaml:5: agent.key: " + noKeyHere}},
		{"api_key at the top level", server + "api_key: sk-proj-Hunter2Hunter2Hunter2x\n", []string{
			"airlock.yaml:5: api_key: " + noKeyHere}},
		{"an OpenAI key as api_key_env", server + "agent: {api_key_env: sk-proj-Hunter2Hunter2Hunter2x}\n", []string{aKey}},
		{"an Anthropic key as api_key_env", server + "agent: {api_key_env: sk-ant-api03-Hunter2Hunter2Hunter2x}\n", []string{aKey}},
		// A Groq key is a valid variable name; its shape gives it away.
		{"a Groq key as api_key_env", server + "agent: {api_key_env: gsk_Hunter2Hunter2Hunter2x}\n", []string{aKey}},
		{"a Google key as api_key_env", server + "agent: {api_key_env: AIzaHunter2Hunter2Hunter2x}\n", []string{aKey}},
		// Whatever it is, a value that is no variable's name is not shown.
		{"a key of no known shape as api_key_env", server + "agent: {api_key_env: \"Hunter2-Hunter2.Hunter2x\"}\n", []string{notAName}},
		{"api_key_env starting with a digit", server + "agent: {api_key_env: 1KEY}\n", []string{notAName}},
		{"api_key_env with a dollar", server + "agent: {api_key_env: $OPENAI_API_KEY}\n", []string{notAName}},
		{"api_key_env with braces", server + "agent: {api_key_env: \"${OPENAI_API_KEY}\"}\n", []string{notAName}},
		{"api_key_env empty", server + "agent: {api_key_env: \"\"}\n", []string{
			"airlock.yaml:5: agent.api_key_env: must not be empty: name the environment variable that holds the API key, such as OPENAI_API_KEY, " +
				"or remove the key for OPENAI_API_KEY or ANTHROPIC_API_KEY by provider"}},
		{"api_key_env a list", server + "agent: {api_key_env: [A, B]}\n", []string{
			"airlock.yaml:5: agent.api_key_env: must be a string, not a list"}},
		{"a key in base_url", server + "agent: {base_url: \"https://user:sk-proj-Hunter2Hunter2Hunter2x@openrouter.ai/api/v1\"}\n", []string{
			"airlock.yaml:5: agent.base_url: must not contain user information: put the key in the variable api_key_env names"}},
		{"a key in base_url's query", server + "agent: {base_url: \"https://example.com/v1?key=sk-proj-Hunter2Hunter2Hunter2x\"}\n", []string{
			"airlock.yaml:5: agent.base_url: must not have a query or a fragment, " + example}},

		// provider and model.
		{"unknown provider", server + "agent: {provider: gemini}\n", []string{
			`airlock.yaml:5: agent.provider: must be openai or anthropic, not "gemini"`}},
		{"provider in capitals", server + "agent: {provider: OpenAI}\n", []string{
			`airlock.yaml:5: agent.provider: must be openai or anthropic, not "OpenAI"`}},
		{"provider empty", server + "agent: {provider: \"\"}\n", []string{
			`airlock.yaml:5: agent.provider: must be openai or anthropic, not ""`}},
		{"provider null", server + "agent:\n  provider:\n", []string{
			"airlock.yaml:6: agent.provider: has no value: give one, or remove the key"}},
		{"model empty", server + "agent: {model: \"\"}\n", []string{
			"airlock.yaml:5: agent.model: must not be empty: name the provider's model, such as gpt-5.2 or claude-sonnet-4-5"}},
		{"model with a space", server + "agent: {model: \"gpt 5\"}\n", []string{
			`airlock.yaml:5: agent.model: "gpt 5" contains spaces or control characters`}},
		{"model too long", server + "agent: {model: " + strings.Repeat("m", 257) + "}\n", []string{
			"airlock.yaml:5: agent.model: is longer than 256 characters"}},
		{"model a mapping", server + "agent:\n  model: {name: x}\n", []string{
			"airlock.yaml:6: agent.model: must be a string, not a mapping"}},

		// base_url.
		{"base_url without a scheme", server + "agent: {base_url: \"localhost:11434/v1\"}\n", []string{
			"airlock.yaml:5: agent.base_url: must start with http:// or https://, " + example}},
		{"base_url host and port alone", server + "agent: {base_url: \"127.0.0.1:11434\"}\n", []string{
			"airlock.yaml:5: agent.base_url: must start with http:// or https://, " + example}},
		{"base_url of another scheme", server + "agent: {base_url: \"ftp://models.example.com/v1\"}\n", []string{
			"airlock.yaml:5: agent.base_url: must start with http:// or https://, " + example}},
		{"base_url without a host", server + "agent: {base_url: \"http://:8080/v1\"}\n", []string{
			"airlock.yaml:5: agent.base_url: names no host, " + example}},
		{"base_url with a fragment", server + "agent: {base_url: \"https://example.com/v1#x\"}\n", []string{
			"airlock.yaml:5: agent.base_url: must not have a query or a fragment, " + example}},
		{"base_url with an empty query", server + "agent: {base_url: \"https://example.com/v1?\"}\n", []string{
			"airlock.yaml:5: agent.base_url: must not have a query or a fragment, " + example}},
		{"base_url with a trailing space", server + "agent: {base_url: \"https://example.com/v1 \"}\n", []string{
			"airlock.yaml:5: agent.base_url: must not contain spaces or control characters: give the provider's endpoint, " + example}},
		{"base_url with a port too large", server + "agent: {base_url: \"http://127.0.0.1:99999/v1\"}\n", []string{
			"airlock.yaml:5: agent.base_url: has an invalid port: use 1 to 65535, " + example}},
		{"base_url with port 0", server + "agent: {base_url: \"http://127.0.0.1:0/v1\"}\n", []string{
			"airlock.yaml:5: agent.base_url: has an invalid port: use 1 to 65535, " + example}},
		{"base_url with an empty port", server + "agent: {base_url: \"http://127.0.0.1:/v1\"}\n", []string{
			"airlock.yaml:5: agent.base_url: has an empty port: give one, or leave out the colon"}},
		{"base_url not a URL", server + "agent: {base_url: \"https://exa mple.com\"}\n", []string{
			"airlock.yaml:5: agent.base_url: must not contain spaces or control characters: give the provider's endpoint, " + example}},
		{"base_url with a bad escape", server + "agent: {base_url: \"https://example.com/%zz\"}\n", []string{
			"airlock.yaml:5: agent.base_url: is not a URL: give the provider's endpoint, " + example}},

		// system.
		{"system blank", server + "agent: {system: \"  \"}\n", []string{
			"airlock.yaml:5: agent.system: must not be empty: give the system prompt, or remove the key for the built-in one"}},
		{"system too long", server + "agent: {system: " + strings.Repeat("s", 64<<10+1) + "}\n", []string{
			"airlock.yaml:5: agent.system: is 65537 bytes, more than 64 KiB"}},
		{"system with NUL", server + "agent: {system: \"a\\0b\"}\n", []string{
			"airlock.yaml:5: agent.system: must not contain a NUL character"}},

		// The bounds.
		{"max_steps zero", server + "agent: {max_steps: 0}\n", []string{
			"airlock.yaml:5: agent.max_steps: must be a whole number of steps from 1 to 10000"}},
		{"max_steps negative", server + "agent: {max_steps: -1}\n", []string{
			"airlock.yaml:5: agent.max_steps: must be a whole number of steps from 1 to 10000"}},
		{"max_steps too large", server + "agent: {max_steps: 10001}\n", []string{
			"airlock.yaml:5: agent.max_steps: must be a whole number of steps from 1 to 10000"}},
		{"max_steps not whole", server + "agent: {max_steps: 2.5}\n", []string{
			"airlock.yaml:5: agent.max_steps: must be a whole number of steps from 1 to 10000"}},
		{"max_steps quoted", server + "agent: {max_steps: \"5\"}\n", []string{
			"airlock.yaml:5: agent.max_steps: must be a whole number of steps from 1 to 10000"}},
		{"max_tools_in_prompt zero", server + "agent: {max_tools_in_prompt: 0}\n", []string{
			"airlock.yaml:5: agent.max_tools_in_prompt: must be a whole number of tools from 1 to 1000"}},
		{"max_tools_in_prompt too large", server + "agent: {max_tools_in_prompt: 1001}\n", []string{
			"airlock.yaml:5: agent.max_tools_in_prompt: must be a whole number of tools from 1 to 1000"}},

		// Every problem of the section at once.
		{"all at once", server + "agent:\n  provider: openai-compatible\n  max_steps: 0\n  base_url: openrouter.ai\n", []string{
			`airlock.yaml:6: agent.provider: must be openai or anthropic, not "openai-compatible"`,
			"airlock.yaml:7: agent.max_steps: must be a whole number of steps from 1 to 10000",
			"airlock.yaml:8: agent.base_url: must start with http:// or https://, " + example}},
	}
	checkErrors(t, tests, func(src string) (*Config, error) {
		return Parse([]byte(src), "airlock.yaml", t.TempDir())
	}, "Hunter2")
}

// TestCheckBaseURL checks the endpoints airlock run's --base-url takes
// too.
func TestCheckBaseURL(t *testing.T) {
	for _, raw := range []string{
		"http://127.0.0.1:11434/v1", "http://localhost:1234/v1", "http://[::1]:8080", "https://api.openai.com/v1",
		"https://openrouter.ai/api/v1/", "HTTPS://API.ANTHROPIC.COM", "https://api.example.com:443/v1",
	} {
		if msg := CheckBaseURL(raw); msg != "" {
			t.Errorf("CheckBaseURL(%q) = %q, want it accepted", raw, msg)
		}
	}
	for _, raw := range []string{
		"", "/v1", "//api.openai.com/v1", "api.openai.com", "mailto:a@b", "http://", "https://a:b@api.openai.com/v1",
		"https://api.openai.com/v1?k=1", "https://api.openai.com/v1#x", "http://127.0.0.1:65536", "https://api.openai.com:x/v1",
		"https://api.openai.com/v1\n", "\thttps://api.openai.com/v1",
	} {
		if CheckBaseURL(raw) == "" {
			t.Errorf("CheckBaseURL(%q) accepted it", raw)
		}
	}
}

// TestInstructions: a server's instructions reach no model unless its
// entry says include.
func TestInstructions(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		want       string
	}{
		{"default", server, ""},
		{"omit", server + "    instructions: omit\n", InstructionsOmit},
		{"include", server + "    instructions: include\n", InstructionsInclude},
		{"remote", "servers:\n  - {id: r, transport: http, url: https://mcp.example.com/mcp, allowed_hosts: [mcp.example.com], allowed_tools: [], instructions: include}\n",
			InstructionsInclude},
	} {
		cfg, err := Parse([]byte(tt.yaml), "airlock.yaml", t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := cfg.Servers[0].Instructions; got != tt.want {
			t.Errorf("%s: Instructions = %q, want %q", tt.name, got, tt.want)
		}
	}
	// Read from an mcpServers file, a server has no instructions: key, and
	// its instructions are left out.
	cfg, err := Load("testdata/mcp.json", &LoadOptions{Allow: []string{"github:get_issue"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cfg.Servers {
		if s.Instructions == InstructionsInclude {
			t.Errorf("server %s of an mcpServers file includes its instructions", s.ID)
		}
	}
}

func TestInstructionsErrors(t *testing.T) {
	tests := []errorCase{
		{"other value", server + "    instructions: yes\n", []string{
			`airlock.yaml:5: servers[0].instructions: must be omit or include, not "yes"`}},
		{"a boolean", server + "    instructions: true\n", []string{
			`airlock.yaml:5: servers[0].instructions: must be omit or include, not "true"`}},
		{"capitals", server + "    instructions: Include\n", []string{
			`airlock.yaml:5: servers[0].instructions: must be omit or include, not "Include"`}},
		{"empty", server + "    instructions: \"\"\n", []string{
			`airlock.yaml:5: servers[0].instructions: must be omit or include, not ""`}},
		{"null", server + "    instructions:\n", []string{
			"airlock.yaml:5: servers[0].instructions: has no value: give one, or remove the key"}},
		{"the text itself", server + "    instructions: [Use search first.]\n", []string{
			"airlock.yaml:5: servers[0].instructions: must be a string, not a list"}},
		{"misspelt", server + "    instruction: include\n", []string{
			`airlock.yaml:5: servers[0].instruction: unknown key; did you mean "instructions"?`}},
		{"at the top level", server + "instructions: include\n", []string{
			"airlock.yaml:5: instructions: unknown key here: it belongs in a server entry under servers:"}},
	}
	checkErrors(t, tests, func(src string) (*Config, error) {
		return Parse([]byte(src), "airlock.yaml", t.TempDir())
	})
}
