package core

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/sdrnet/sdrnet/internal/autoscheme"
	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// TestSameConfig: two configurations that differ in any field are not
// shared. The table names every field of Config, so a field added
// without a comparison fails here.
func TestSameConfig(t *testing.T) {
	nscc, err := cc.Parse("nscc")
	if err != nil {
		t.Fatal(err)
	}
	change := map[string]func(*Config){
		"MTU":              func(c *Config) { c.MTU = 1500 },
		"PathMTU":          func(c *Config) { c.PathMTU = func(netip.AddrPort) int { return 1500 } },
		"ChunkSize":        func(c *Config) { c.ChunkSize *= 2 },
		"MaxMsgs":          func(c *Config) { c.MaxMsgs = 16 },
		"MaxBytesInFlight": func(c *Config) { c.MaxBytesInFlight = 1 << 20 },
		"Scheme":           func(c *Config) { c.Scheme = reliability.SelectiveRepeat{NACK: true} },
		"Chooser":          func(c *Config) { c.Chooser = autoscheme.New() },
		"InitialRTT":       func(c *Config) { c.InitialRTT *= 2 },
		"Rate":             func(c *Config) { c.Rate = 1e9 },
		"Paths":            func(c *Config) { c.Paths = 4 },
		"Select":           func(c *Config) { c.Select = path.Oblivious },
		"SelectTuning":     func(c *Config) { c.SelectTuning.DWRRWindowRTTs = 3 },
		"Seed":             func(c *Config) { c.Seed = 9 },
		"HandshakeTimeout": func(c *Config) { c.HandshakeTimeout *= 2 },
		"IdleTimeout":      func(c *Config) { c.IdleTimeout *= 2 },
		"CC":               func(c *Config) { c.CC = nscc },
		"LineRate":         func(c *Config) { c.LineRate = 1e9 },
		"LearnLineRate":    func(c *Config) { c.LearnLineRate = true },
		"HostNoise":        func(c *Config) { c.HostNoise = 5 },
		"BaseRTT":          func(c *Config) { c.BaseRTT = 5 },
		"Keys":             func(c *Config) { c.Keys = func(bool) KeyExchange { return nil } },
		"Protection":       func(c *Config) { c.Protection = wire.ProtectFull },
		"MinRTO":           func(c *Config) { c.MinRTO *= 2 },
	}
	base, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if ty := reflect.TypeOf(base); ty.NumField() != len(change) {
		for i := range ty.NumField() {
			if change[ty.Field(i).Name] == nil {
				t.Errorf("Config.%s: no case here, and perhaps none in sameConfig", ty.Field(i).Name)
			}
		}
	}
	same := base
	if !sameConfig(&base, &same) {
		t.Fatal("a configuration is not the same as its copy")
	}
	for field, f := range change {
		other := base
		f(&other)
		if sameConfig(&base, &other) || sameConfig(&other, &base) {
			t.Errorf("configurations that differ in %s are the same", field)
		}
	}
	// A named controller is the same as itself; a scheme of a type that
	// is not comparable is the same as nothing.
	a, b := base, base
	a.CC, b.CC = nscc, nscc
	if !sameConfig(&a, &b) {
		t.Error("two configurations with NSCC are not the same")
	}
	a.Scheme, b.Scheme = uncomparable{}, uncomparable{}
	if sameConfig(&a, &b) {
		t.Error("schemes of a type == cannot compare are the same")
	}
}

// uncomparable is a scheme that == cannot compare.
type uncomparable struct {
	reliability.SelectiveRepeat
	_ []int
}

// TestConnsShareConfig: connections made with one configuration hold one
// copy of it; a different one, or one with a function, gets its own.
func TestConnsShareConfig(t *testing.T) {
	e := NewEndpoint()
	addr := netip.MustParseAddrPort("127.0.0.1:2")
	conn := func(id uint64, cfg Config) *Conn {
		c, err := e.NewConn(id, id, addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.useBoth() // as its first messages each way would
		return c
	}
	a, b := conn(1, Config{Paths: 4, Select: path.Oblivious}), conn(2, Config{Paths: 4, Select: path.Oblivious})
	if a.cfg != b.cfg {
		t.Error("two connections with one configuration hold a copy each")
	}
	if c := conn(3, Config{Paths: 2, Select: path.Oblivious}); c.cfg == a.cfg || c.cfg.Paths != 2 {
		t.Errorf("a different configuration is shared (%d paths)", c.cfg.Paths)
	}
	mtu := func(netip.AddrPort) int { return 1500 }
	if c, d := conn(4, Config{PathMTU: mtu}), conn(5, Config{PathMTU: mtu}); c.cfg == d.cfg {
		t.Error("configurations with a function are shared")
	}
}
