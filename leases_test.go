package airlock_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/testenv"
)

// addHold adds the tool hold to s: it marks "hold start", waits ms
// milliseconds (or until cancelled), marks "hold end" and answers. Servers
// of several hosts given one mark file record, in order, how many of
// their calls ran at once.
func addHold(s *mcp.Server) {
	s.AddTool(&mcp.Tool{Name: "hold", Description: "Hold a call for ms milliseconds.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Ms int }
			json.Unmarshal(req.Params.Arguments, &in)
			mark("hold start")
			select {
			case <-time.After(time.Duration(in.Ms) * time.Millisecond):
			case <-ctx.Done():
			}
			mark("hold end")
			return &mcp.CallToolResult{Content: text("held")}, nil
		})
}

// replicaServer is the entry of server s (mode hold) as each replica of a
// test configures it: its own process, whose marks go to record.
func replicaServer(t *testing.T, record string, limit int, queue time.Duration) config.Server {
	srv := testServer(t, "s", "hold")
	srv.Env[envMark] = record
	srv.MaxConcurrency, srv.QueueTimeout = limit, queue
	return srv
}

// replicaConfig is a replica's configuration: srv, with its store in the
// PostgreSQL database url and the audit key every replica shares.
func replicaConfig(t *testing.T, url, key string, srv config.Server) *config.Config {
	cfg := newConfig(t, srv)
	classify(cfg, "s", "read", "hold")
	cfg.Store.URL, cfg.Store.AuditKey = url, key
	return cfg
}

// overlap reads a record of hold marks: how many calls started, and how
// many ran at once at most.
func overlap(t *testing.T, record string) (started, most int) {
	t.Helper()
	b, err := os.ReadFile(record)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	running := 0
	for _, line := range strings.Split(string(b), "\n") {
		switch line {
		case "hold start":
			started++
			running++
			most = max(most, running)
		case "hold end":
			running--
		}
	}
	return started, most
}

// TestMaxConcurrencyAcrossReplicas: two hosts on one PostgreSQL database,
// each with its own process of server s (max_concurrency: 2), take 50
// concurrent calls between them: never more than 2 run at once across
// both servers, and every call completes.
func TestMaxConcurrencyAcrossReplicas(t *testing.T) {
	url, key := testenv.PostgresDatabase(t), filepath.Join(t.TempDir(), "audit.key")
	record := filepath.Join(t.TempDir(), "record")
	var hosts []*airlock.Host
	for range 2 {
		hosts = append(hosts, open(t, replicaConfig(t, url, key, replicaServer(t, record, 2, time.Minute))))
	}
	var wg sync.WaitGroup
	results := make(chan *airlock.Result, 50)
	for i := range 50 {
		h := hosts[i%2]
		wg.Go(func() {
			results <- h.Call(t.Context(), h.Snapshot(), airlock.Call{Name: "s__hold", Arguments: json.RawMessage(`{"ms":20}`)})
		})
	}
	wg.Wait()
	close(results)
	for r := range results {
		wantStatus(t, r, airlock.OK)
	}
	if started, most := overlap(t, record); started != 50 || most != 2 {
		t.Errorf("the servers ran %d calls, at most %d at once across both; want 50, and 2 at once", started, most)
	}
}

// TestTenantLimitAcrossReplicas: limits.max_concurrent_per_tenant holds
// across two hosts on one database: while one runs the tenant's call, the
// other's is busy at once, and sent when the first has ended.
func TestTenantLimitAcrossReplicas(t *testing.T) {
	url, key := testenv.PostgresDatabase(t), filepath.Join(t.TempDir(), "audit.key")
	record := filepath.Join(t.TempDir(), "record")
	var hosts []*airlock.Host
	for range 2 {
		cfg := replicaConfig(t, url, key, replicaServer(t, record, 4, time.Minute))
		cfg.Limits.MaxConcurrentPerTenant = 1
		hosts = append(hosts, openIn(t, cfg, nil, &airlock.Options{Principal: airlock.Principal{Tenant: "acme"}}))
	}
	first := make(chan *airlock.Result, 1)
	go func() {
		first <- hosts[0].Call(t.Context(), hosts[0].Snapshot(), airlock.Call{Name: "s__hold", Arguments: json.RawMessage(`{"ms":1500}`)})
	}()
	waitFor(t, 20*time.Second, "the first call to reach its server", func() bool { started, _ := overlap(t, record); return started == 1 })
	r := hosts[1].Call(t.Context(), hosts[1].Snapshot(), airlock.Call{Name: "s__hold", Arguments: json.RawMessage(`{}`)})
	wantStatus(t, r, airlock.Busy)
	if !strings.Contains(r.Content, "tenant acme") || !strings.Contains(r.Content, "limits.max_concurrent_per_tenant") || !strings.Contains(r.Content, "not sent") {
		t.Errorf("busy = %q", r.Content)
	}
	wantStatus(t, <-first, airlock.OK)
	wantStatus(t, hosts[1].Call(t.Context(), hosts[1].Snapshot(), airlock.Call{Name: "s__hold", Arguments: json.RawMessage(`{}`)}), airlock.OK)
	if started, _ := overlap(t, record); started != 2 {
		t.Errorf("the servers ran %d calls, want 2: the busy call was sent", started)
	}
}

// TestLimitStoreDown: a write that cannot be counted against the limit
// across replicas, because the store fails, is refused and not sent; a
// read runs within its replica's own limit, as on one host.
func TestLimitStoreDown(t *testing.T) {
	url, key := testenv.PostgresDatabase(t), filepath.Join(t.TempDir(), "audit.key")
	record := filepath.Join(t.TempDir(), "record")
	cfg := replicaConfig(t, url, key, replicaServer(t, record, 2, time.Minute))
	cfg.Policy.Tools = nil
	classify(cfg, "s", "write", "hold")
	h := open(t, cfg)
	reader := open(t, replicaConfig(t, url, key, replicaServer(t, record, 2, time.Minute)))
	admin, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(t.Context(), `ALTER TABLE leases RENAME TO leases_away`); err != nil {
		t.Fatal(err)
	}
	r := call(t, h, "s__hold", `{}`)
	wantStatus(t, r, airlock.Denied)
	if want := "cannot count the call against max_concurrency of server s across replicas"; !strings.Contains(r.Content, want) || !strings.Contains(r.Content, "not sent") {
		t.Errorf("refusal = %q, want it to say %q and that the call was not sent", r.Content, want)
	}
	if got := calls(t, replicaServer(t, record, 2, 0)); len(got) != 0 {
		t.Errorf("the server received %v", got)
	}
	wantStatus(t, call(t, reader, "s__hold", `{}`), airlock.OK)
	if started, _ := overlap(t, record); started != 1 {
		t.Errorf("the servers ran %d calls, want the read alone", started)
	}
	if _, err := admin.Exec(t.Context(), `ALTER TABLE leases_away RENAME TO leases`); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, call(t, h, "s__hold", `{}`), airlock.OK)
}

// A lease holder is a host in a process of its own (mode leaseholder,
// its configuration and lease ttl in these variables) that starts a call
// that holds its place until the process is killed.
const (
	envLeaseHolder = "AIRLOCK_TEST_LEASE_HOLDER"
	envLeaseTTL    = "AIRLOCK_TEST_LEASE_TTL"
)

func holdLeaseAndDie() {
	var cfg config.Config
	if err := json.Unmarshal([]byte(os.Getenv(envLeaseHolder)), &cfg); err != nil {
		fmt.Println("bad spec:", err)
		os.Exit(2)
	}
	ttl, err := time.ParseDuration(os.Getenv(envLeaseTTL))
	if err != nil {
		fmt.Println("bad ttl:", err)
		os.Exit(2)
	}
	airlock.SetLeaseTTL(ttl)
	h, err := airlock.Open(context.Background(), &cfg, nil)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	r := h.Call(context.Background(), h.Snapshot(), airlock.Call{Name: "s__hold", Arguments: json.RawMessage(`{"ms":3600000}`)})
	fmt.Println("the held call ended:", r.Status)
	os.Exit(2)
}

// startLeaseHolder starts a lease holder whose server s (max_concurrency:
// 1) marks in record, and waits until its call holds the only place.
func startLeaseHolder(t *testing.T, url, key, record string, ttl time.Duration) *exec.Cmd {
	t.Helper()
	spec, err := json.Marshal(replicaConfig(t, url, key, replicaServer(t, record, 1, time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command(os.Args[0])
	holder.Env = append(os.Environ(), envMode+"=leaseholder", envLeaseHolder+"="+string(spec), envLeaseTTL+"="+ttl.String())
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	go func() {
		for s := bufio.NewScanner(out); s.Scan(); {
			t.Logf("lease holder: %s", s.Text())
		}
	}()
	waitFor(t, 30*time.Second, "the lease holder's call to reach its server", func() bool { started, _ := overlap(t, record); return started == 1 })
	return holder
}

// openWaiter opens another replica of server s (max_concurrency: 1), whose
// calls wait for a place until queue.
func openWaiter(t *testing.T, url, key string, queue time.Duration) *airlock.Host {
	return open(t, replicaConfig(t, url, key, replicaServer(t, filepath.Join(t.TempDir(), "record"), 1, queue)))
}

// TestDeadReplicaFreesItsPlaces: a replica killed while its call holds the
// only place of server s gives it back as soon as PostgreSQL sees its
// connection gone, long before its lease's ttl.
func TestDeadReplicaFreesItsPlaces(t *testing.T) {
	url, key := testenv.PostgresDatabase(t), filepath.Join(t.TempDir(), "audit.key")
	const ttl = 10 * time.Minute
	holder := startLeaseHolder(t, url, key, filepath.Join(t.TempDir(), "record"), ttl)
	// While the holder lives, its place is taken.
	wantStatus(t, call(t, openWaiter(t, url, key, 300*time.Millisecond), "s__hold", `{}`), airlock.Busy)

	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	holder.Wait()
	// Far within the ttl of the kill, and of queue_timeout, it is free.
	wantStatus(t, call(t, openWaiter(t, url, key, 30*time.Second), "s__hold", `{}`), airlock.OK)
}

// TestHungReplicaFreesItsPlaces: a replica that hangs (stopped: its
// connections stay open, so PostgreSQL sees it alive) while its call holds
// the only place of server s keeps it from the other replicas no longer
// than its lease's ttl.
func TestHungReplicaFreesItsPlaces(t *testing.T) {
	url, key := testenv.PostgresDatabase(t), filepath.Join(t.TempDir(), "audit.key")
	const ttl = 2 * time.Second
	holder := startLeaseHolder(t, url, key, filepath.Join(t.TempDir(), "record"), ttl)
	// Two more replicas: one that waits less than the ttl for a place,
	// one that waits longer.
	impatient := openWaiter(t, url, key, 300*time.Millisecond)
	patient := openWaiter(t, url, key, 10*time.Second)
	if err := holder.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()

	// Its place is still taken: a call that waits less than the ttl finds
	// none.
	r := call(t, impatient, "s__hold", `{}`)
	wantContent(t, r, airlock.Busy, "max_concurrency")
	// Within the ttl of the stop, it is free.
	r = call(t, patient, "s__hold", `{}`)
	wantStatus(t, r, airlock.OK)
	if took := time.Since(stopped); took > ttl+time.Second {
		t.Errorf("the hung replica's place came free %v after it stopped, want within its ttl (%v)", took, ttl)
	}
	if r.QueueWait < 500*time.Millisecond {
		t.Errorf("the call waited %v for the hung replica's place, want it to wait for the lease to expire", r.QueueWait)
	}
}

// TestLeaseRenewedWhileCallRuns: a call that runs longer than the lease
// ttl keeps its place, since its host renews its leases: another replica
// waiting past the ttl still finds none.
func TestLeaseRenewedWhileCallRuns(t *testing.T) {
	const ttl = 600 * time.Millisecond
	t.Cleanup(airlock.SetLeaseTTL(ttl)) // after the hosts have closed
	url, key := testenv.PostgresDatabase(t), filepath.Join(t.TempDir(), "audit.key")
	record := filepath.Join(t.TempDir(), "record")
	long := open(t, replicaConfig(t, url, key, replicaServer(t, record, 1, time.Minute)))
	other := open(t, replicaConfig(t, url, key, replicaServer(t, filepath.Join(t.TempDir(), "record"), 1, 3*ttl)))
	first := make(chan *airlock.Result, 1)
	go func() { first <- call(t, long, "s__hold", `{"ms":3000}`) }()
	waitFor(t, 20*time.Second, "the long call to reach its server", func() bool { started, _ := overlap(t, record); return started == 1 })
	r := call(t, other, "s__hold", `{}`)
	wantStatus(t, r, airlock.Busy)
	if r.QueueWait < 3*ttl {
		t.Errorf("busy after %v, want after queue_timeout (%v)", r.QueueWait, 3*ttl)
	}
	wantStatus(t, <-first, airlock.OK)
	// Released when the call ended, not when its lease would expire.
	r = call(t, other, "s__hold", `{}`)
	wantStatus(t, r, airlock.OK)
	if r.QueueWait > ttl/2 {
		t.Errorf("the call waited %v for a place released at once", r.QueueWait)
	}
}
