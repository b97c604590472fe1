package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"

	"code.dny.dev/ssrf"
)

// Options configures a [Guard]. A nil *Options, and the zero value, refuse
// every address that is not public.
type Options struct {
	// AllowLoopback lets connections reach loopback addresses (127.0.0.0/8,
	// ::1). Development mode sets it; private ranges stay refused.
	AllowLoopback bool

	// AllowPrivate lets connections reach private ranges: RFC 1918, the
	// RFC 6598 shared address space and IPv6 unique local addresses. It is
	// the allow_private_networks exception of one server. Cloud metadata
	// addresses inside those ranges stay refused.
	AllowPrivate bool

	// Resolver resolves host names. Nil means net.DefaultResolver.
	Resolver Resolver
}

// Resolver resolves a host name to addresses. *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard decides which addresses the host may connect to and dials only
// those. It is safe for concurrent use.
type Guard struct {
	opts     Options
	resolver Resolver
	iana     *ssrf.Guardian
}

// New returns a guard with the given options.
func New(opts *Options) *Guard {
	g := &Guard{resolver: net.DefaultResolver}
	if opts != nil {
		g.opts = *opts
	}
	if g.opts.Resolver != nil {
		g.resolver = g.opts.Resolver
	}
	// Ports and networks are not restricted here: MCP servers listen on any
	// port, and DialContext admits TCP only.
	g.iana = ssrf.New(ssrf.WithAnyPort(), ssrf.WithAnyNetwork())
	return g
}

// Options returns the guard's options.
func (g *Guard) Options() Options { return g.opts }

// Class is the kind of address an IP is, for the guard's decisions and its
// messages.
type Class int

const (
	// Public addresses may always be dialled.
	Public Class = iota
	// Loopback: 127.0.0.0/8 and ::1.
	Loopback
	// Private: RFC 1918, RFC 6598 (100.64.0.0/10) and fc00::/7.
	Private
	// LinkLocal: 169.254.0.0/16 and fe80::/10.
	LinkLocal
	// Metadata: cloud instance metadata services, never allowed.
	Metadata
	// Unspecified: 0.0.0.0/8 and ::.
	Unspecified
	// Multicast (and the IPv4 broadcast address).
	Multicast
	// Reserved: every other special-purpose range (documentation,
	// benchmarking, 240.0.0.0/4, IPv6 outside global unicast, 6to4, Teredo,
	// NAT64 and the rest of the IANA special-purpose registries).
	Reserved
)

var classNames = [...]string{
	Public:      "a public address",
	Loopback:    "a loopback address",
	Private:     "a private network address",
	LinkLocal:   "a link-local address",
	Metadata:    "a cloud metadata address",
	Unspecified: "an unspecified address",
	Multicast:   "a multicast or broadcast address",
	Reserved:    "a reserved, non-public address",
}

// String describes the class in words, for messages.
func (c Class) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return "class " + strconv.Itoa(int(c))
	}
	return classNames[c]
}

// metadataAddrs are instance metadata services of cloud providers. They sit
// in link-local, shared or unique local space, so an allow option for those
// ranges must not reach them.
var metadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OpenStack, …
	netip.MustParseAddr("169.254.170.2"):   true, // AWS ECS task metadata
	netip.MustParseAddr("169.254.169.123"): true, // AWS time sync
	netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
	netip.MustParseAddr("fd00:ec2::254"):   true, // AWS over IPv6
	netip.MustParseAddr("fd00:ec2::23"):    true, // AWS time sync over IPv6
}

var (
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	broadcast   = netip.MustParseAddr("255.255.255.255")
)

// Classify returns the class of ip. IPv4-mapped IPv6 addresses are
// classified as the IPv4 address they carry.
func Classify(ip netip.Addr) Class {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return Reserved
	case metadataAddrs[ip.WithZone("")]:
		return Metadata
	case ip.IsUnspecified(), ip.Is4() && thisNetwork.Contains(ip):
		return Unspecified
	case ip.IsLoopback():
		return Loopback
	case ip.IsMulticast(), ip == broadcast:
		return Multicast
	case ip.IsLinkLocalUnicast():
		return LinkLocal
	case ip.IsPrivate(), ip.Is4() && sharedSpace.Contains(ip):
		return Private
	}
	return Public
}

// ErrRefused is matched (errors.Is) by every [RefusedError].
var ErrRefused = errors.New("egress refused")

// RefusedError reports a connection the guard refused. Nothing was sent.
type RefusedError struct {
	// Host is the name or address that was asked for.
	Host string
	// Addr is the refused address (invalid if the problem was not an
	// address, for example a network other than TCP).
	Addr netip.Addr
	// Class is the refused address's class.
	Class Class
	// Reason, when set, replaces the class in the message.
	Reason string
}

func (e *RefusedError) Error() string {
	what := e.Host
	if e.Addr.IsValid() && e.Addr.String() != e.Host {
		what += " (" + e.Addr.String() + ")"
	}
	reason := e.Reason
	if reason == "" {
		reason = "it is " + e.Class.String()
		switch e.Class {
		case Loopback:
			reason += "; loopback is reachable only in development mode"
		case Private:
			reason += "; set allow_private_networks on the server to reach it"
		}
	}
	return fmt.Sprintf("refusing to connect to %s: %s", what, reason)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Check returns nil if ip may be dialled, else a *RefusedError.
func (g *Guard) Check(ip netip.Addr) error {
	return g.check(ip.String(), ip)
}

func (g *Guard) check(host string, ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	c := Classify(ip)
	switch {
	case c == Loopback && g.opts.AllowLoopback, c == Private && g.opts.AllowPrivate:
		return nil
	case c != Public:
		return &RefusedError{Host: host, Addr: ip, Class: c}
	}
	// The IANA special-purpose registries hold more than netip's
	// predicates know (documentation and benchmarking ranges, 6to4,
	// Teredo, NAT64, everything outside IPv6 global unicast).
	if err := g.iana.SafeAddr(ip); err != nil {
		return &RefusedError{Host: host, Addr: ip, Class: Reserved}
	}
	return nil
}

// CheckHost resolves host (a name or an IP literal, without a port) and
// returns a *RefusedError if any of its addresses is refused. It serves
// early checks, before a person is asked to do anything; the connection
// itself is checked again when it is dialled.
func (g *Guard) CheckHost(ctx context.Context, host string) error {
	addrs, err := g.resolve(ctx, "ip", host)
	if err != nil {
		return err
	}
	for _, ip := range addrs {
		if err := g.check(host, ip); err != nil {
			return err
		}
	}
	return nil
}

func (g *Guard) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	if host == "" {
		return nil, errors.New("no host to connect to")
	}
	addrs, err := g.resolver.LookupNetIP(ctx, network, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	return addrs, nil
}

// DialContext connects to address ("host:port") over TCP. It resolves the
// host once, refuses the addresses the guard does not allow, and dials the
// allowed ones, in order, by IP; the dialer's Control hook checks the address
// once more just before the connect system call. If every address is
// refused, the error is a *RefusedError and no connection was attempted.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var ipNetwork string
	switch network {
	case "tcp":
		ipNetwork = "ip"
	case "tcp4":
		ipNetwork = "ip4"
	case "tcp6":
		ipNetwork = "ip6"
	default:
		return nil, &RefusedError{Host: address, Reason: "only TCP connections are allowed, not " + network}
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("dial %s: invalid port", address)
	}
	addrs, err := g.resolve(ctx, ipNetwork, host)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Control: g.Control}
	var firstRefusal, lastErr error
	for _, ip := range addrs {
		if err := g.check(host, ip); err != nil {
			if firstRefusal == nil {
				firstRefusal = err
			}
			continue
		}
		conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(ip.Unmap(), uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	if lastErr != nil {
		return nil, lastErr
	}
	return nil, firstRefusal
}

// Control is a net.Dialer Control hook: it refuses to connect a socket to an
// address the guard does not allow. It runs after the address is resolved
// and before the connect system call, so it sees exactly what is dialled.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp4", "tcp6":
	default:
		return &RefusedError{Host: address, Reason: "only TCP connections are allowed, not " + network}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Host: address, Reason: "the address is not an IP address and port"}
	}
	return g.check(ap.Addr().String(), ap.Addr())
}
