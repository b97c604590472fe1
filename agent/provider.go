package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/config"
)

// A Provider is a model behind an API: it takes a conversation and the
// tools the model may call, and answers with text and tool calls. The
// OpenAI (Chat Completions, and every server compatible with it) and
// Anthropic (Messages) providers are built on their official SDKs.
//
// Step may be called from one goroutine at a time; a Provider keeps no
// state between steps: the conversation is in the Request.
type Provider interface {
	// Name is the provider's name: openai or anthropic.
	Name() string
	// Unsupported says why the provider's API would refuse the tool, or
	// "" when it takes it. A tool it would refuse is left out of every
	// request, and the run says so.
	Unsupported(t ToolSpec) string
	// MaxTools is how many tools one request may carry, 0 for no limit.
	MaxTools() int
	// Step sends one request. With Request.Stream, text is told each
	// piece of the answer's text as it arrives (it may be nil). An error
	// is a *ProviderError. No tool call of an answer that did not arrive
	// whole is returned.
	Step(ctx context.Context, req *Request, text func(string)) (*Response, error)
}

// A ToolSpec is one tool as a provider's request carries it: the
// catalog's local name, description and input schema, exactly the schema
// the pipeline validates arguments against.
type ToolSpec struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// A Request is one model step.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
	Stream    bool
}

// A Response is the model's answer to one step.
type Response struct {
	Text  string
	Calls []ToolCall
	// Stop is the provider's reason for stopping (stop, tool_calls,
	// end_turn, tool_use, length, max_tokens …), for the log.
	Stop  string
	Usage Usage
}

// Usage counts the tokens a provider reported.
type Usage struct {
	Input  int64 `json:"input_tokens"`
	Output int64 `json:"output_tokens"`
}

// A ProviderError is a failed step: what the provider answered (its
// HTTP status and its own words), or why no answer came. It never holds
// the API key.
type ProviderError struct {
	Provider string
	// Status is the HTTP status of the provider's answer, 0 when none
	// came (a connection that failed, a stream cut short).
	Status int
	// Message is the provider's error text, or what went wrong.
	Message string
	// RetryAfter is how long the provider asked to be left alone
	// (Retry-After), 0 when it did not say.
	RetryAfter time.Duration
	// Interrupted: the answer's stream was cut short; the step may be
	// asked again as a new request.
	Interrupted bool
	// Network: no answer came at all (refused, reset, timed out).
	Network bool
	Err     error
}

func (e *ProviderError) Error() string {
	switch {
	case e.Status != 0:
		status := strings.TrimSpace(fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))) // 529 has no text
		return fmt.Sprintf("%s: HTTP %s: %s", e.Provider, status, e.Message)
	default:
		return fmt.Sprintf("%s: %s", e.Provider, e.Message)
	}
}

func (e *ProviderError) Unwrap() error { return e.Err }

// retryable reports whether asking again may get an answer: a rate limit,
// an overloaded or failing provider, a stream cut short, a connection
// that failed.
func (e *ProviderError) retryable() bool {
	switch {
	case e.Interrupted, e.Network:
		return true
	case e.Status == http.StatusTooManyRequests, e.Status == http.StatusRequestTimeout, e.Status == http.StatusConflict:
		return true
	case e.Status >= 500:
		return true
	case e.Status == 529: // Anthropic: overloaded
		return true
	}
	return false
}

// ProviderOptions choose a provider and how to reach it.
type ProviderOptions struct {
	// Name is config.ProviderOpenAI or config.ProviderAnthropic.
	Name string
	// BaseURL is the endpoint, "" for the provider's own.
	BaseURL string
	// APIKey is the key, "" for none (a local server).
	APIKey string
	// HTTPClient sends the requests; nil means a client of its own.
	HTTPClient *http.Client
	// IdleTimeout bounds how long a provider may send nothing on a
	// request (no response, or no event of its stream; an answer not
	// streamed must come whole within it) before the step is given up and
	// asked again, as a stream cut short is. Zero means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// DefaultIdleTimeout is how long a provider may stay silent on a request.
const DefaultIdleTimeout = 5 * time.Minute

// An idleWatch cancels a request its provider has sent nothing on for d:
// without it, a provider that accepts a request and then hangs
// (never answers, or stops mid-stream without closing it) would hold the
// run for ever, whatever the retries.
type idleWatch struct {
	d     time.Duration
	t     *time.Timer
	fired atomic.Bool
}

// watchIdle returns ctx, cancelled after d of silence, the watch, and the
// function that stops it.
func watchIdle(ctx context.Context, d time.Duration) (context.Context, *idleWatch, func()) {
	ctx, cancel := context.WithCancel(ctx)
	w := &idleWatch{d: d}
	w.t = time.AfterFunc(d, func() {
		w.fired.Store(true)
		cancel()
	})
	return ctx, w, func() {
		w.t.Stop()
		cancel()
	}
}

// touch says the provider sent something.
func (w *idleWatch) touch() { w.t.Reset(w.d) }

// err is the step's failure when the watch gave up on it, or nil.
func (w *idleWatch) err(provider string) error {
	if !w.fired.Load() {
		return nil
	}
	return &ProviderError{Provider: provider, Interrupted: true,
		Message: fmt.Sprintf("the provider sent nothing for %s: the answer was given up", w.d)}
}

// NewProvider returns the provider o names. The SDKs are told nothing from
// the environment (no OPENAI_* or ANTHROPIC_* variable): the key, the
// endpoint and the headers are exactly those given. The SDKs' own retries
// are off; the loop retries (with Retry-After) and says so.
func NewProvider(o ProviderOptions) (Provider, error) {
	if o.BaseURL != "" {
		if msg := config.CheckBaseURL(o.BaseURL); msg != "" {
			return nil, fmt.Errorf("the base URL %s", msg)
		}
		if o.APIKey != "" && plainRemote(o.BaseURL) {
			return nil, fmt.Errorf("the base URL is plain http to a host that is not loopback, and the API key would travel in the clear: use https, or run the local server without a key")
		}
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	switch o.Name {
	case config.ProviderOpenAI:
		return newOpenAI(o, hc), nil
	case config.ProviderAnthropic:
		return newAnthropic(o, hc), nil
	}
	return nil, fmt.Errorf("unknown provider %q: use openai or anthropic", o.Name)
}

// idleTimeout is o's IdleTimeout, or the default.
func idleTimeout(o ProviderOptions) time.Duration {
	if o.IdleTimeout > 0 {
		return o.IdleTimeout
	}
	return DefaultIdleTimeout
}

// plainRemote reports whether raw is plain http to a host that is not a
// loopback address or localhost.
func plainRemote(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		return false
	}
	return !Loopback(u.Hostname())
}

// Loopback reports whether host is localhost or a loopback address.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// errText is what a provider's error body says, or the status text.
func errText(msg string, status int) string {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		msg = http.StatusText(status)
	}
	return printable(msg, 1000)
}

// retryAfter reads a response's Retry-After (seconds or an HTTP date) or
// retry-after-ms, 0 when it says nothing usable.
func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if d, ok := retryWait(v, time.Millisecond); ok {
			return d
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if d, ok := retryWait(v, time.Second); ok {
		return d
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// retryWait reads v as a positive number of units. A wait too long for a
// Duration (or infinite) is the longest one: converted, it would overflow
// to a negative wait, read as none at all.
func retryWait(v string, unit time.Duration) (time.Duration, bool) {
	var n float64
	if _, err := fmt.Sscanf(v, "%g", &n); err != nil || !(n > 0) {
		return 0, false
	}
	if n >= float64(math.MaxInt64/int64(unit)) {
		return time.Duration(math.MaxInt64), true
	}
	return time.Duration(n * float64(unit)), true
}

// networkError wraps an error of a request that got no answer, or
// returns nil for a cancelled context (the caller's to report).
func networkError(provider string, err error) *ProviderError {
	var ue *url.Error
	msg := err.Error()
	if errors.As(err, &ue) {
		// The URL is the endpoint's; say what failed, without it.
		msg = ue.Err.Error()
	}
	return &ProviderError{Provider: provider, Message: "no answer from the provider: " + printable(msg, 500), Network: true, Err: err}
}
