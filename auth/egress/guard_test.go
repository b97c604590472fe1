package egress_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/auth/egress"
)

// fakeResolver answers from a table and counts lookups.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
	lookups map[string]int
}

func newResolver(answers map[string]string) *fakeResolver {
	r := &fakeResolver{answers: map[string][]netip.Addr{}, lookups: map[string]int{}}
	for host, list := range answers {
		for _, a := range splitComma(list) {
			r.answers[host] = append(r.answers[host], netip.MustParseAddr(a))
		}
	}
	return r
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups[host]++
	a, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return a, nil
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[host]
}

func TestClassify(t *testing.T) {
	tests := []struct {
		ip   string
		want egress.Class
	}{
		{"8.8.8.8", egress.Public},
		{"2606:4700::1111", egress.Public},
		{"127.0.0.1", egress.Loopback},
		{"127.8.9.10", egress.Loopback},
		{"::1", egress.Loopback},
		{"::ffff:127.0.0.1", egress.Loopback},
		{"10.1.2.3", egress.Private},
		{"172.16.0.1", egress.Private},
		{"172.31.255.255", egress.Private},
		{"192.168.1.1", egress.Private},
		{"100.64.0.1", egress.Private},
		{"fd12:3456::1", egress.Private},
		{"169.254.1.1", egress.LinkLocal},
		{"fe80::1", egress.LinkLocal},
		{"169.254.169.254", egress.Metadata},
		{"::ffff:169.254.169.254", egress.Metadata},
		{"fd00:ec2::254", egress.Metadata},
		{"100.100.100.200", egress.Metadata},
		{"0.0.0.0", egress.Unspecified},
		{"0.1.2.3", egress.Unspecified},
		{"::", egress.Unspecified},
		{"224.0.0.1", egress.Multicast},
		{"ff02::1", egress.Multicast},
		{"255.255.255.255", egress.Multicast},
		{"172.32.0.1", egress.Public},
	}
	for _, tt := range tests {
		if got := egress.Classify(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("Classify(%s) = %v, want %v", tt.ip, got, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	none := &egress.Options{}
	dev := &egress.Options{AllowLoopback: true}
	private := &egress.Options{AllowPrivate: true}
	both := &egress.Options{AllowLoopback: true, AllowPrivate: true}
	tests := []struct {
		ip        string
		opts      *egress.Options
		wantOK    bool
		wantClass egress.Class
	}{
		{"8.8.8.8", none, true, egress.Public},
		{"127.0.0.1", none, false, egress.Loopback},
		{"127.0.0.1", dev, true, egress.Loopback},
		{"::1", dev, true, egress.Loopback},
		{"::ffff:127.0.0.1", dev, true, egress.Loopback},
		{"127.0.0.1", private, false, egress.Loopback},
		{"10.0.0.1", dev, false, egress.Private},
		{"10.0.0.1", private, true, egress.Private},
		{"fd12::1", private, true, egress.Private},
		{"169.254.169.254", both, false, egress.Metadata},
		{"fd00:ec2::254", both, false, egress.Metadata},
		{"169.254.1.1", both, false, egress.LinkLocal},
		{"fe80::1", both, false, egress.LinkLocal},
		{"0.0.0.0", both, false, egress.Unspecified},
		{"::", both, false, egress.Unspecified},
		{"239.1.1.1", both, false, egress.Multicast},
		// Special-purpose ranges netip does not know about.
		{"192.0.2.10", both, false, egress.Reserved},    // documentation
		{"198.18.0.1", both, false, egress.Reserved},    // benchmarking
		{"240.0.0.1", both, false, egress.Reserved},     // reserved
		{"2001:db8::1", both, false, egress.Reserved},   // documentation
		{"2002:a00:1::1", both, false, egress.Reserved}, // 6to4 of 10.0.0.1
		{"64:ff9b::a00:1", both, false, egress.Reserved},
		{"::127.0.0.1", both, false, egress.Reserved}, // IPv4-compatible
	}
	for _, tt := range tests {
		g := egress.New(tt.opts)
		err := g.Check(netip.MustParseAddr(tt.ip))
		if tt.wantOK {
			if err != nil {
				t.Errorf("Check(%s, %+v) = %v, want nil", tt.ip, *tt.opts, err)
			}
			continue
		}
		var re *egress.RefusedError
		if !errors.As(err, &re) || !errors.Is(err, egress.ErrRefused) {
			t.Errorf("Check(%s, %+v) = %v, want a *RefusedError", tt.ip, *tt.opts, err)
			continue
		}
		if re.Class != tt.wantClass {
			t.Errorf("Check(%s) class = %v, want %v", tt.ip, re.Class, tt.wantClass)
		}
	}
}

// countingListener is a loopback listener that counts accepted connections.
func countingListener(t *testing.T) (addr netip.AddrPort, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String()), accepted
}

func TestDialContext(t *testing.T) {
	lnAddr, accepted := countingListener(t)
	port := lnAddr.Port()
	res := newResolver(map[string]string{
		"loop.test":  "127.0.0.1",
		"meta.test":  "169.254.169.254",
		"zero.test":  "0.0.0.0",
		"mixed.test": "0.0.0.0,127.0.0.1",
	})
	hostPort := func(h string) string { return net.JoinHostPort(h, itoa(port)) }

	// A name that resolves to loopback is refused outside development
	// mode, and nothing is dialled.
	g := egress.New(&egress.Options{Resolver: res})
	if _, err := g.DialContext(context.Background(), "tcp", hostPort("loop.test")); !errors.Is(err, egress.ErrRefused) {
		t.Fatalf("dial loop.test = %v, want refused", err)
	}
	if got := accepted.Load(); got != 0 {
		t.Fatalf("connections accepted = %d, want 0", got)
	}

	// In development mode it connects.
	dev := egress.New(&egress.Options{Resolver: res, AllowLoopback: true})
	c, err := dev.DialContext(context.Background(), "tcp", hostPort("loop.test"))
	if err != nil {
		t.Fatalf("dial loop.test in development mode: %v", err)
	}
	c.Close()
	waitAccepted(t, accepted, 1)

	// 0.0.0.0 reaches the local host on Linux; it is refused even in
	// development mode. Only loopback could be touched if this failed.
	if _, err := dev.DialContext(context.Background(), "tcp", hostPort("zero.test")); !errors.Is(err, egress.ErrRefused) {
		t.Fatalf("dial zero.test = %v, want refused", err)
	}
	// A name with a refused and an allowed address: only the allowed one
	// is dialled.
	c, err = dev.DialContext(context.Background(), "tcp", hostPort("mixed.test"))
	if err != nil {
		t.Fatalf("dial mixed.test: %v", err)
	}
	c.Close()
	waitAccepted(t, accepted, 2)

	// The metadata address is refused before any connection attempt. The
	// context is already cancelled, so that not even a broken guard could
	// send a packet there: the dialer gives up before connecting.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, g := range []*egress.Guard{dev, egress.New(&egress.Options{Resolver: res, AllowLoopback: true, AllowPrivate: true})} {
		_, err := g.DialContext(cancelled, "tcp", net.JoinHostPort("meta.test", "80"))
		var re *egress.RefusedError
		if !errors.As(err, &re) || re.Class != egress.Metadata {
			t.Errorf("dial meta.test = %v, want a metadata refusal", err)
		}
		_, err = g.DialContext(cancelled, "tcp", "169.254.169.254:80")
		if !errors.As(err, &re) || re.Class != egress.Metadata {
			t.Errorf("dial 169.254.169.254 = %v, want a metadata refusal", err)
		}
	}

	// The name is resolved once per dial: the address checked is the
	// address dialled.
	if got := res.count("loop.test"); got != 2 {
		t.Errorf("lookups of loop.test = %d, want 2 (one per dial)", got)
	}

	// Only TCP.
	if _, err := dev.DialContext(context.Background(), "udp", hostPort("127.0.0.1")); !errors.Is(err, egress.ErrRefused) {
		t.Errorf("udp dial = %v, want refused", err)
	}
}

func waitAccepted(t *testing.T, accepted *atomic.Int64, want int64) {
	t.Helper()
	// The accept loop runs concurrently with the dial that returned; give
	// it time to count (a generous bound, not a performance check).
	deadline := time.Now().Add(10 * time.Second)
	for accepted.Load() < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := accepted.Load(); got != want {
		t.Errorf("connections accepted = %d, want %d", got, want)
	}
}

func itoa(n uint16) string { return strconv.Itoa(int(n)) }

func TestControl(t *testing.T) {
	tests := []struct {
		network, addr string
		opts          egress.Options
		wantOK        bool
	}{
		{"tcp4", "169.254.169.254:80", egress.Options{AllowLoopback: true, AllowPrivate: true}, false},
		{"tcp6", "[fd00:ec2::254]:80", egress.Options{AllowLoopback: true, AllowPrivate: true}, false},
		{"tcp4", "127.0.0.1:8080", egress.Options{}, false},
		{"tcp4", "127.0.0.1:8080", egress.Options{AllowLoopback: true}, true},
		{"tcp4", "10.0.0.5:443", egress.Options{AllowLoopback: true}, false},
		{"tcp4", "10.0.0.5:443", egress.Options{AllowPrivate: true}, true},
		{"udp4", "127.0.0.1:53", egress.Options{AllowLoopback: true}, false},
		{"tcp4", "not-an-ip:80", egress.Options{AllowLoopback: true}, false},
	}
	for _, tt := range tests {
		err := egress.New(&tt.opts).Control(tt.network, tt.addr, nil)
		if (err == nil) != tt.wantOK {
			t.Errorf("Control(%s, %s, %+v) = %v, want ok=%v", tt.network, tt.addr, tt.opts, err, tt.wantOK)
		}
		if err != nil && !errors.Is(err, egress.ErrRefused) {
			t.Errorf("Control error %v does not match ErrRefused", err)
		}
	}
}

func TestCheckHost(t *testing.T) {
	res := newResolver(map[string]string{
		"public.test":  "93.184.215.14",
		"private.test": "10.9.8.7",
		"split.test":   "93.184.215.14,10.9.8.7",
	})
	g := egress.New(&egress.Options{Resolver: res})
	if err := g.CheckHost(context.Background(), "public.test"); err != nil {
		t.Errorf("CheckHost(public.test) = %v", err)
	}
	for _, h := range []string{"private.test", "split.test", "127.0.0.1", "[::1]"} {
		if err := g.CheckHost(context.Background(), trimBrackets(h)); !errors.Is(err, egress.ErrRefused) {
			t.Errorf("CheckHost(%s) = %v, want refused", h, err)
		}
	}
	if err := g.CheckHost(context.Background(), "unknown.test"); err == nil || errors.Is(err, egress.ErrRefused) {
		t.Errorf("CheckHost(unknown.test) = %v, want a resolution error", err)
	}
}

func trimBrackets(s string) string {
	if len(s) > 1 && s[0] == '[' && s[len(s)-1] == ']' {
		return s[1 : len(s)-1]
	}
	return s
}

func TestRefusedErrorMessage(t *testing.T) {
	g := egress.New(nil)
	err := g.Check(netip.MustParseAddr("10.0.0.1"))
	if got, want := err.Error(), "refusing to connect to 10.0.0.1: it is a private network address; set allow_private_networks on the server to reach it"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}
