package core

import (
	"net/netip"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// TestCookieValidity mints a cookie at one time, address and id and
// checks it at another: fresh and bound to all three, dead after the
// lifetime, forged bits rejected, and not revived when the 32 bits of
// time on the wire wrap.
func TestCookieValidity(t *testing.T) {
	const life = 5 * monotime.Second
	jar := newCookieJar([]byte("0123456789abcdef0123456789abcdef"), life)
	other := newCookieJar([]byte("fedcba9876543210fedcba9876543210"), life)
	from := netip.MustParseAddrPort("10.0.0.1:5000")
	mapped := netip.AddrPortFrom(netip.AddrFrom16(from.Addr().As16()), from.Port())
	issued := monotime.Time(7 * monotime.Second)
	good := jar.mint(issued, from, 42)
	ms := monotime.Millisecond
	for _, tt := range []struct {
		name   string
		jar    *cookieJar
		now    monotime.Time
		from   netip.AddrPort
		source uint64
		edit   func(*wire.Cookie)
		want   bool
	}{
		{"fresh", jar, issued, from, 42, nil, true},
		{"a second later", jar, issued.Add(monotime.Second), from, 42, nil, true},
		{"at the lifetime", jar, issued.Add(life), from, 42, nil, true},
		{"past the lifetime", jar, issued.Add(life + ms), from, 42, nil, false},
		{"long after", jar, issued.Add(1000 * monotime.Second), from, 42, nil, false},
		{"32-bit time wrapped", jar, issued.Add(1 << 32 * ms), from, 42, nil, false},
		{"from the future", jar, issued.Add(-ms), from, 42, nil, false},
		{"other port", jar, issued, netip.MustParseAddrPort("10.0.0.1:5001"), 42, nil, false},
		{"other address", jar, issued, netip.MustParseAddrPort("10.0.0.2:5000"), 42, nil, false},
		{"IPv4-mapped form of the address", jar, issued, mapped, 42, nil, true},
		{"other connection id", jar, issued, from, 43, nil, false},
		{"other connection id above 2^32", jar, issued, from, 1<<32 | 42, nil, false},
		{"other secret", other, issued, from, 42, nil, false},
		{"MAC bit flipped", jar, issued, from, 42, func(c *wire.Cookie) { c.MAC[15] ^= 1 }, false},
		{"time moved back", jar, issued.Add(ms), from, 42, func(c *wire.Cookie) { c.Time++ }, false},
		{"zero cookie", jar, issued, from, 42, func(c *wire.Cookie) { *c = wire.Cookie{} }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			if tt.edit != nil {
				tt.edit(&c)
			}
			if got := tt.jar.valid(tt.now, tt.from, tt.source, &c); got != tt.want {
				t.Fatalf("valid = %v, want %v", got, tt.want)
			}
		})
	}
	if n := testing.AllocsPerRun(100, func() {
		c := jar.mint(issued, from, 42)
		jar.valid(issued, from, 42, &c)
	}); n != 0 {
		t.Fatalf("mint and check allocate %v times", n)
	}
}

func TestListenConfigChecks(t *testing.T) {
	cfg, _ := Config{}.withDefaults()
	for _, lc := range []ListenConfig{
		{Secret: []byte("short")},
		{CookieLifetime: monotime.Microsecond},
		{MaxConns: -1},
		{MaxHalfOpen: -1},
		{HalfOpenTimeout: -1},
	} {
		if _, err := lc.withDefaults(&cfg); err == nil {
			t.Errorf("%+v accepted", lc)
		}
	}
	a, _ := ListenConfig{}.withDefaults(&cfg)
	b, _ := ListenConfig{}.withDefaults(&cfg)
	if string(a.Secret) != string(b.Secret) || len(a.Secret) < 16 {
		t.Fatal("the secret derived from the seed is not deterministic")
	}
	cfg.Seed++
	if c, _ := (ListenConfig{}).withDefaults(&cfg); string(c.Secret) == string(a.Secret) {
		t.Fatal("the secret does not depend on the seed")
	}
}
