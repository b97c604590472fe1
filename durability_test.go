package airlock_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/canonical"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
)

// kills is how many times TestJournalSurvivesKill kills the host. `make
// durability` runs it with 200 (about half a minute, a minute and more with
// -race); the default keeps the whole suite quick.
var kills = flag.Int("durability.kills", 50, "times TestJournalSurvivesKill kills the host with SIGKILL")

// pgKills is how many times TestJournalSurvivesKillOnPostgres kills a
// replica: `make durability` runs it with 1000.
var pgKills = flag.Int("durability.pgkills", 50, "times TestJournalSurvivesKillOnPostgres kills a replica with SIGKILL")

const (
	// envDurableHost is the directory of the configuration and state of
	// mode "durable-host": a host that makes journaled writes until it is
	// killed (durableHost).
	envDurableHost = "AIRLOCK_TEST_DURABLE_HOST"
	// envDurableRound names the round, which every call's text carries.
	envDurableRound = "AIRLOCK_TEST_DURABLE_ROUND"
	// envDurableStore is the durable host's store.url: "" for SQLite in
	// its state directory.
	envDurableStore = "AIRLOCK_TEST_DURABLE_STORE"
	// inFlight is how many writes the durable host keeps in flight.
	inFlight = 64
)

// durableConfig is the configuration of the durable host: the test
// binary's SDK server, which marks every call it receives in dir/mark
// before it answers, with its echo tool a write that policy allows.
func durableConfig(dir string) (*config.Config, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	url := os.Getenv(envDurableStore)
	slots := inFlight
	if url != "" {
		// On PostgreSQL max_concurrency holds across replicas, and a
		// killed replica's places come free as soon as PostgreSQL sees
		// its connections gone (TestDeadReplicaFreesItsPlaces), long
		// before their leases would expire (durableHost makes them live
		// ten minutes): room for the places of one replica that has just
		// died besides the next one's is all a round needs. Were they
		// freed only by their leases' expiry, the replica started after
		// a few kills would find none, its writes would end busy, and the
		// soak would fail.
		slots = 2 * inFlight
	}
	return &config.Config{Dir: dir, Store: config.Store{URL: url}, Servers: []config.Server{{
		ID: "s", Transport: "stdio", Scope: "host", Command: exe, Cwd: dir,
		Env:          map[string]string{envMode: "sdk", envMark: filepath.Join(dir, "mark")},
		AllowedTools: []string{"*"}, ProtocolVersions: bothVersions, MaxConcurrency: slots,
		RequestTimeout: 30 * time.Second, ConnectTimeout: 30 * time.Second, ProbeTimeout: 10 * time.Second,
	}}, Policy: config.Policy{
		Tools: []config.ToolClass{{Server: "s", Tool: "echo", Effect: "write", Source: "test"}},
		Rules: []config.Rule{{Server: "s", Tool: "echo", Decision: "allow", Source: "test"}},
	}}, nil
}

// durableHost opens a host and makes journaled writes, inFlight at a
// time, each with a text of its own, until it is killed. It says "ready"
// on stdout once the first write has been answered: the writes flow from
// then on, however slowly the host started (a store across the network,
// the race detector), so that a kill a moment later meets them in flight.
func durableHost(dir string) {
	ctx := context.Background()
	cfg, err := durableConfig(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "durable host:", err)
		os.Exit(2)
	}
	airlock.SetLeaseTTL(10 * time.Minute)
	h, err := airlock.Open(ctx, cfg, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "durable host:", err)
		os.Exit(2)
	}
	snap := h.Snapshot()
	round := os.Getenv(envDurableRound)
	var ready sync.Once
	for g := range inFlight {
		go func() {
			for k := 0; ; k++ {
				args, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("%s-%d-%d", round, g, k)})
				if r := h.Call(ctx, snap, airlock.Call{Name: "s__echo", Arguments: args}); r.Status != airlock.OK {
					fmt.Fprintln(os.Stderr, "durable host:", r.Err)
					os.Exit(2)
				}
				ready.Do(func() { fmt.Println("ready") })
			}
		}()
	}
	select {}
}

// TestJournalSurvivesKill kills a host that has 64 journaled writes in
// flight with SIGKILL, at a random point, many times over one state
// directory, and then checks what the server received against the
// journal: every call the server received has its intent on disk, no
// call was received twice, no call has two intents, every intent has
// exactly one outcome once a new host has recovered the journal, and
// every intent recorded as succeeded was received.
func TestJournalSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a host many times")
	}
	survivesKills(t, t.TempDir(), "", *kills)
}

// TestJournalSurvivesKillOnPostgres is TestJournalSurvivesKill with the
// journal in PostgreSQL, and a second replica on the same database that
// is never killed, writing all along: each killed replica's calls end as
// TestJournalSurvivesKill says, and none of the live replica's intents is
// taken for a dead writer's (every one of them succeeds), however often a
// new replica starts and recovers the journal beside it.
func TestJournalSurvivesKillOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a replica many times")
	}
	url := testenv.PostgresDatabase(t)
	t.Setenv(envDurableStore, url)

	// The survivor: a replica in this process, with a server of its own,
	// under another id ("live"), which tells its records apart.
	sdir := t.TempDir()
	cfg, err := durableConfig(sdir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Servers[0].ID = "live"
	cfg.Policy.Tools[0].Server, cfg.Policy.Rules[0].Server = "live", "live"
	live, err := airlock.Open(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var writers sync.WaitGroup
	var failed atomic.Value
	for g := range 8 {
		writers.Go(func() {
			for k := 0; ctx.Err() == nil; k++ {
				args, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("survivor-%d-%d", g, k)})
				if r := live.Call(context.Background(), live.Snapshot(), airlock.Call{Name: "live__echo", Arguments: args}); r.Status != airlock.OK {
					failed.Store(fmt.Sprintf("%s: %v", r.Status, r.Err))
					return
				}
			}
		})
	}
	survivesKills(t, t.TempDir(), url, *pgKills)
	stop()
	writers.Wait()
	live.Close()
	if f := failed.Load(); f != nil {
		t.Fatalf("a write of the live replica failed: %s", f)
	}

	survivor := 0
	for _, r := range journalOf(t, cfg, cfg.StateDir()) {
		if r.Server != "live" {
			continue // a killed replica's, checked by survivesKills
		}
		survivor++
		if r.Status != store.OutcomeSucceeded {
			t.Errorf("the live replica's intent %s ended %s (%s)", r.ID, r.Status, r.Detail)
		}
	}
	received := len(receivedCalls(t, filepath.Join(sdir, "mark")))
	if survivor == 0 || survivor != received {
		t.Errorf("the live replica's server received %d calls; its journal has %d of them", received, survivor)
	}
}

// survivesKills kills a host that has 64 journaled writes in flight with
// SIGKILL, at a random point, kills times over one state directory (dir),
// with its journal in storeURL ("" for SQLite in dir), and then checks what
// the server received against the journal: every call the server received
// has its intent on disk, no call was received twice, no call has two
// intents, every intent has exactly one outcome once a new host has
// recovered the journal, and every intent recorded as succeeded was
// received.
func survivesKills(t *testing.T, dir, storeURL string, kills int) {
	t.Helper()
	for round := range kills {
		cmd, stderr := startHostProcess(t, envMode+"=durable-host", envDurableHost+"="+dir, fmt.Sprint(envDurableRound, "=r", round),
			envDurableStore+"="+storeURL)
		// Kill at a random point of the writes, with groups of intents
		// and outcomes in every stage.
		time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if strings.Contains(stderr.String(), "durable host:") {
			t.Fatalf("round %d: a write failed before the kill:\n%s", round, stderr.String())
		}
	}

	// A new host ends what the killed ones left (their servers, which
	// the kernel also signalled) and marks their open intents unknown.
	// PostgreSQL takes a moment to see that the last one's connections
	// are gone: until it does, that writer counts as alive.
	cfg, err := durableConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store.URL = storeURL
	var recs []store.Record
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		h, err := airlock.Open(t.Context(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
		recs = journalOf(t, cfg, cfg.StateDir())
		if !slices.ContainsFunc(recs, func(r store.Record) bool { return r.Status == store.OutcomeOpen && r.Server == "s" }) ||
			time.Now().After(deadline) {
			break
		}
	}
	intents := map[string]store.Record{} // by args_hash: one text per call
	for _, r := range recs {
		if r.Server != "s" {
			continue // another replica's (TestJournalSurvivesKillOnPostgres)
		}
		if prev, ok := intents[r.ArgsHash]; ok {
			t.Errorf("one call has two intents: %s and %s", prev.ID, r.ID)
		}
		intents[r.ArgsHash] = r
		if r.Status == store.OutcomeOpen {
			t.Errorf("intent %s is still open after recovery", r.ID)
		}
	}

	received := map[string]bool{} // by args_hash
	for _, args := range receivedCalls(t, filepath.Join(dir, "mark")) {
		var v map[string]any
		if err := json.Unmarshal([]byte(args), &v); err != nil {
			t.Fatalf("the server received %q: %v", args, err)
		}
		hash := canonical.Hash(v)
		if received[hash] {
			t.Errorf("the server received %s twice", args)
		}
		received[hash] = true
		if _, ok := intents[hash]; !ok {
			t.Errorf("the server received %s, which has no intent on disk", args)
		}
	}
	for hash, r := range intents {
		if r.Status == store.OutcomeSucceeded && !received[hash] {
			t.Errorf("intent %s succeeded, but the server never received it", r.ID)
		}
	}
	if len(received) == 0 {
		t.Fatal("the server received no call: the test tested nothing")
	}
	t.Logf("%d kills: the server received %d calls; the journal has %d intents", kills, len(received), len(intents))
}

// journalOf reads every record of cfg's journal: its store, or the SQLite
// database in the state directory stateDir.
func journalOf(t *testing.T, cfg *config.Config, stateDir string) []store.Record {
	t.Helper()
	st, err := airlock.OpenConfiguredStore(cfg, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return records(t, st)
}

// records returns every record of st's journal.
func records(t *testing.T, st store.Store) []store.Record {
	t.Helper()
	recs, err := st.Journal().Records(t.Context(), store.RecordFilter{All: true})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// receivedCalls returns the arguments of the echo calls that the test
// server marked in the file at path (each with one write, before it
// answers); a line cut short, by a server killed while writing it, is
// skipped.
func receivedCalls(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if args, ok := strings.CutPrefix(line, "call echo "); ok && json.Valid([]byte(args)) {
			out = append(out, args)
		}
	}
	return out
}
