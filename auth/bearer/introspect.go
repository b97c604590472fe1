package bearer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Introspection configures an RFC 7662 check of each token with the
// authorization server, so that a revoked token stops working before it
// expires. It runs only for tokens that passed every local check, so a
// stranger cannot make the server send garbage to the authorization server.
type Introspection struct {
	// URL is the introspection endpoint. Required.
	URL string
	// ClientID and ClientSecret authenticate this resource server to the
	// endpoint (HTTP Basic, RFC 6749 §2.3.1). Both empty sends no
	// credentials.
	ClientID     string
	ClientSecret string
	// CacheTTL is how long an answer is reused. An answer is never kept past
	// the token's own expiry. Zero means 30 seconds; negative disables the
	// cache.
	CacheTTL time.Duration
	// MaxEntries bounds the cache. Zero means 10000.
	MaxEntries int
}

// introspector asks the authorization server whether tokens are active and
// remembers the answers in a bounded cache keyed by the token's SHA-256 (the
// token itself is not kept).
type introspector struct {
	cfg    Introspection
	client *http.Client
	now    func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]introspected
}

type introspected struct {
	active bool
	until  time.Time
}

func newIntrospector(cfg Introspection, client *http.Client, now func() time.Time) *introspector {
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = 30 * time.Second
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 10000
	}
	return &introspector{cfg: cfg, client: client, now: now, cache: make(map[[32]byte]introspected)}
}

// check returns nil if the token is active, an invalid-token error if the
// server says it is not, and an unavailable error if the server could not
// be asked: a token is never accepted on a failed check.
func (in *introspector) check(ctx context.Context, token string, expiry time.Time) *Error {
	sum := sha256.Sum256([]byte(token))
	now := in.now()
	if in.cfg.CacheTTL > 0 {
		in.mu.Lock()
		e, ok := in.cache[sum]
		in.mu.Unlock()
		if ok && now.Before(e.until) {
			if !e.active {
				return invalid(descInactive, nil)
			}
			return nil
		}
	}
	active, err := in.ask(ctx, token)
	if err != nil {
		return unavailable(descIntrospectDown, err)
	}
	if in.cfg.CacheTTL > 0 {
		until := now.Add(in.cfg.CacheTTL)
		if expiry.Before(until) {
			until = expiry
		}
		in.store(sum, introspected{active: active, until: until}, now)
	}
	if !active {
		return invalid(descInactive, nil)
	}
	return nil
}

// store adds an answer, first dropping expired entries and then, if the
// cache is still full, arbitrary ones.
func (in *introspector) store(key [32]byte, e introspected, now time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.cache) >= in.cfg.MaxEntries {
		for k, old := range in.cache {
			if !now.Before(old.until) {
				delete(in.cache, k)
			}
		}
		for k := range in.cache {
			if len(in.cache) < in.cfg.MaxEntries {
				break
			}
			delete(in.cache, k)
		}
	}
	in.cache[key] = e
}

func (in *introspector) ask(ctx context.Context, token string) (bool, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.cfg.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if in.cfg.ClientID != "" || in.cfg.ClientSecret != "" {
		req.SetBasicAuth(url.QueryEscape(in.cfg.ClientID), url.QueryEscape(in.cfg.ClientSecret))
	}
	resp, err := in.client.Do(req)
	if err != nil {
		// The error names the URL, never the form (the token is in it).
		return false, fmt.Errorf("introspect at %s: %w", redact(in.cfg.URL), unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, err := readJSON(resp, in.cfg.URL, maxIntrospectionBytes)
	if err != nil {
		if errors.Is(err, errNotFound) {
			return false, fmt.Errorf("introspection endpoint %s answered 404", redact(in.cfg.URL))
		}
		return false, err
	}
	obj, err := decodeObject(body)
	if err != nil {
		return false, fmt.Errorf("introspection response: %w", err)
	}
	active, ok := obj["active"].(bool)
	if !ok {
		return false, errors.New("introspection response has no boolean active member")
	}
	return active, nil
}

// unwrapURLError drops the *url.Error wrapper, whose message repeats the
// URL, leaving the transport's reason.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
