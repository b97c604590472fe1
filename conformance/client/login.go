package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/auth/secrets"
)

// login logs the host's principal in to the scenario's server, as `airlock
// auth login SERVER` does, through the host's own credentials: the host's
// OAuth client (auth/oauth), its secret store and credential partition,
// with approve (AuthOptions.Open) standing in for the person at the
// browser. The host's servers that needed the login connect at the next
// safe point.
func (s *session) login(ctx context.Context) error {
	if _, err := s.host.Credentials().Login(ctx, serverID); err != nil {
		return fmt.Errorf("login: %w", err)
	}
	return nil
}

// approve is the person at the browser. The suite's authorization servers
// approve every request at once and redirect to the redirect URI with the
// code, where the login listens: approve follows that redirect, which is
// all a browser would do. It goes nowhere but loopback.
func approve(ctx context.Context, authURL string) error {
	u, err := url.Parse(authURL)
	if err != nil || !isLoopback(u) {
		return errNotLoopback
	}
	// No proxy from the environment: the flow stays on loopback.
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	browser := &http.Client{
		Transport: tr,
		Timeout:   10 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if !isLoopback(req.URL) {
				return errNotLoopback
			}
			if len(via) >= 5 {
				return fmt.Errorf("more than %d redirects", len(via))
			}
			return nil
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := browser.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	// The login learns the outcome from its own callback; a page other
	// than 200 at the end of the redirects is worth saying, since the
	// login will then wait in vain.
	if resp.StatusCode != http.StatusOK {
		// Only the path: the query holds the code and the state.
		end := resp.Request.URL
		return fmt.Errorf("the authorization flow ended at %s://%s%s with %s", end.Scheme, end.Host, end.Path, resp.Status)
	}
	return nil
}

// consentAlways is the person agreeing to every step-up the suite's
// servers ask for (auth/scope-step-up).
func consentAlways(context.Context, *oauth.StepUp) (bool, error) { return true, nil }

// memoryStore is a secrets.Store in memory: the tokens of one scenario run
// need not outlive it, and nothing is written to disk.
type memoryStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

var _ secrets.Store = (*memoryStore)(nil)

func newMemoryStore() *memoryStore { return &memoryStore{m: map[string][]byte{}} }

func (s *memoryStore) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	if !ok {
		return nil, secrets.ErrNotFound
	}
	return append([]byte(nil), v...), nil
}

func (s *memoryStore) Put(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = append([]byte(nil), value...)
	return nil
}

func (s *memoryStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}
