package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// Providers the agent loop (airlock run) speaks to.
const (
	ProviderOpenAI    = "openai"    // Chat Completions, and every server compatible with it
	ProviderAnthropic = "anthropic" // Messages
)

// Defaults of agent: that airlock run applies when a field of [Agent] is
// zero.
const (
	DefaultAgentMaxSteps     = 50
	DefaultMaxToolsInPrompt  = 64
	DefaultOpenAIKeyEnv      = "OPENAI_API_KEY"
	DefaultAnthropicKeyEnv   = "ANTHROPIC_API_KEY"
	maxAgentSystemPromptSize = 64 << 10
)

// The values of a server's instructions: key.
const (
	InstructionsOmit    = "omit"    // the default: the server's instructions reach no model
	InstructionsInclude = "include" // airlock run puts them in the system prompt, bounded and scrubbed
)

var agentKeys = keySet{
	known: []string{"provider", "model", "base_url", "api_key_env", "system", "max_steps", "max_tools_in_prompt"},
	elsewhere: map[string]string{
		"servers": "at the top level", "limits": "at the top level", "instructions": "in a server entry under servers:",
	},
	refused: map[string]string{"api_key": apiKeyRefused, "apiKey": apiKeyRefused, "key": apiKeyRefused},
}

// apiKeyRefused is the message for a key where only the name of its
// variable may be.
const apiKeyRefused = "an API key never goes in this file: set it in the environment (" + DefaultOpenAIKeyEnv + " or " +
	DefaultAnthropicKeyEnv + "), or name the variable that holds it with agent.api_key_env"

// Agent is agent:, the settings of the agent loop (airlock run). Its zero
// value is the defaults; the command line's flags override it.
type Agent struct {
	// Provider is ProviderOpenAI or ProviderAnthropic; "" leaves the
	// choice to the command line, else to which API key is set.
	Provider string
	// Model is the provider's model name, "" for none given.
	Model string
	// BaseURL is the provider's endpoint, "" for the provider's own: an
	// OpenAI-compatible server (vLLM, Ollama, LM Studio, llama.cpp,
	// LiteLLM, OpenRouter) is reached through it.
	BaseURL string
	// APIKeyEnv names the host variable that holds the API key: "" means
	// OPENAI_API_KEY or ANTHROPIC_API_KEY, by provider. The key is read
	// when a run starts, and is never printed, logged, audited or
	// checkpointed.
	APIKeyEnv string
	// System is the system prompt, "" for the built-in one.
	System string
	// MaxSteps bounds the model steps of one run; 0 means
	// DefaultAgentMaxSteps.
	MaxSteps int
	// MaxToolsInPrompt is how many tools a request may carry: past it the
	// model gets a find_tools tool instead of the whole catalog. 0 means
	// DefaultMaxToolsInPrompt.
	MaxToolsInPrompt int
}

// agent reads agent:.
func (r *yamlReader) agent(p pair, a *Agent) {
	f, ok := r.fields(p.val, "agent", agentKeys)
	if !ok {
		return
	}
	text := func(key string, check func(string) string) (string, bool) {
		kp, ok := f[key]
		if !ok {
			return "", false
		}
		v, ok := r.text(kp.val, "agent."+key)
		if !ok {
			return "", false
		}
		if msg := check(v); msg != "" {
			r.errorf(resolve(kp.val).Line, "agent."+key, "%s", msg)
			return "", false
		}
		return v, true
	}
	if v, ok := text("provider", oneOf(ProviderOpenAI, ProviderAnthropic)); ok {
		a.Provider = v
	}
	if v, ok := text("model", CheckModel); ok {
		a.Model = v
	}
	if v, ok := text("base_url", CheckBaseURL); ok {
		a.BaseURL = v
	}
	if v, ok := text("api_key_env", checkKeyEnv); ok {
		a.APIKeyEnv = v
	}
	if v, ok := text("system", checkSystemPrompt); ok {
		a.System = v
	}
	if kp, ok := f["max_steps"]; ok {
		if v, ok := r.integer(kp.val, "agent.max_steps", 1, 10000, "steps"); ok {
			a.MaxSteps = v
		}
	}
	if kp, ok := f["max_tools_in_prompt"]; ok {
		if v, ok := r.integer(kp.val, "agent.max_tools_in_prompt", 1, 1000, "tools"); ok {
			a.MaxToolsInPrompt = v
		}
	}
}

// KeyEnv is the host variable that holds the API key of provider:
// APIKeyEnv, else the provider's usual one.
func (a *Agent) KeyEnv(provider string) string {
	if a.APIKeyEnv != "" {
		return a.APIKeyEnv
	}
	if provider == ProviderAnthropic {
		return DefaultAnthropicKeyEnv
	}
	return DefaultOpenAIKeyEnv
}

// CheckModel checks a model name: what a provider calls its model, such
// as gpt-5.2, claude-sonnet-4-5 or qwen3:8b.
func CheckModel(name string) string {
	switch {
	case name == "":
		return "must not be empty: name the provider's model, such as gpt-5.2 or claude-sonnet-4-5"
	case len(name) > 256:
		return "is longer than 256 characters"
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return fmt.Sprintf("%s contains spaces or control characters", show(name))
	}
	return ""
}

// CheckBaseURL checks a provider's endpoint: an absolute http or https
// URL with a host, a valid port if any, and without spaces, user
// information, a query or a fragment. Messages do not quote it, since a
// refused one may carry a key.
func CheckBaseURL(raw string) string {
	const example = "such as http://127.0.0.1:11434/v1 or https://openrouter.ai/api/v1"
	if strings.ContainsFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return "must not contain spaces or control characters: give the provider's endpoint, " + example
	}
	if !strings.Contains(raw, "://") {
		// host:port alone, the commonest slip, is no URL to url.Parse.
		return "must start with http:// or https://, " + example
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Opaque != "":
		return "is not a URL: give the provider's endpoint, " + example
	case u.Scheme != "http" && u.Scheme != "https":
		return "must start with http:// or https://, " + example
	case u.Hostname() == "":
		return "names no host, " + example
	case u.User != nil:
		return "must not contain user information: put the key in the variable api_key_env names"
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		return "must not have a query or a fragment, " + example
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "has an invalid port: use 1 to 65535, " + example
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "has an empty port: give one, or leave out the colon"
	}
	return ""
}

// apiKeyPrefixes start the API keys and tokens of well-known services:
// OpenAI, Anthropic, OpenRouter and DeepSeek (sk-), Groq (gsk_), xAI
// (xai-), Google (AIza), Hugging Face (hf_), NVIDIA (nvapi-), Perplexity
// (pplx-), GitHub (ghp_, gho_, ghs_, ghu_, github_pat_), GitLab (glpat-)
// and Slack (xoxb-, xoxp-).
var apiKeyPrefixes = []string{"sk-", "sk_", "gsk_", "xai-", "AIza", "hf_", "nvapi-", "pplx-",
	"ghp_", "gho_", "ghs_", "ghu_", "github_pat_", "glpat-", "xoxb-", "xoxp-"}

// looksLikeAPIKey reports whether v is a provider's key rather than the
// name of a variable: one of apiKeyPrefixes, then at least 16 characters
// in mixed case, as a random key has and a variable's name seldom does.
func looksLikeAPIKey(v string) bool {
	for _, p := range apiKeyPrefixes {
		tail, ok := strings.CutPrefix(v, p)
		if ok && len(tail) >= 16 && strings.ContainsFunc(tail, unicode.IsUpper) && strings.ContainsFunc(tail, unicode.IsLower) {
			return true
		}
	}
	return false
}

// checkKeyEnv checks agent.api_key_env, the name of the variable that
// holds the API key. A refused value is never quoted: it may be the key
// itself, pasted where its variable's name belongs.
func checkKeyEnv(name string) string {
	const fix = "name the environment variable that holds the API key, such as " + DefaultOpenAIKeyEnv
	switch {
	case name == "":
		return "must not be empty: " + fix + ", or remove the key for " + DefaultOpenAIKeyEnv + " or " + DefaultAnthropicKeyEnv + " by provider"
	case looksLikeAPIKey(name):
		return "looks like an API key, not the name of a variable: the key never goes in this file; set it in the environment and " + fix
	case !envNamePattern.MatchString(name):
		return "is not the name of an environment variable (letters, digits and _, not starting with a digit): " + fix + "; the key itself never goes in this file"
	}
	return ""
}

// checkSystemPrompt checks agent.system.
func checkSystemPrompt(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "must not be empty: give the system prompt, or remove the key for the built-in one"
	case len(s) > maxAgentSystemPromptSize:
		return fmt.Sprintf("is %d bytes, more than 64 KiB", len(s))
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain a NUL character"
	}
	return ""
}
