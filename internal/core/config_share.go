package core

import "reflect"

// Connections of one endpoint share their configuration where it is the
// same: a simulated host has a connection to each of a thousand peers,
// all alike, and a copy each would cost more than a connection's slots.
// A configuration is read only once a connection holds it.

// maxSharedConfigs bounds the configurations an endpoint keeps to share,
// so that one whose every connection differs does not search a long list.
const maxSharedConfigs = 8

// sharedConfig returns a configuration equal to cfg that earlier
// connections hold, or a copy of cfg, kept for later ones.
func (e *Endpoint) sharedConfig(cfg Config) *Config {
	for _, c := range e.configs {
		if sameConfig(c, &cfg) {
			return c
		}
	}
	c := new(Config)
	*c = cfg
	if len(e.configs) < maxSharedConfigs {
		e.configs = append(e.configs, c)
	}
	return c
}

// sameConfig reports whether two connections may share one configuration:
// every field equal, functions only where both are unset, and schemes and
// choosers only where they are one value (the same pointer, or equal
// values of one comparable type).
func sameConfig(a, b *Config) bool {
	return a.PathMTU == nil && b.PathMTU == nil && a.Keys == nil && b.Keys == nil &&
		a.MTU == b.MTU && a.ChunkSize == b.ChunkSize && a.MaxMsgs == b.MaxMsgs &&
		a.MaxBytesInFlight == b.MaxBytesInFlight && sameValue(a.Scheme, b.Scheme) &&
		sameValue(a.Chooser, b.Chooser) && a.InitialRTT == b.InitialRTT && a.Rate == b.Rate &&
		a.Paths == b.Paths && a.Select == b.Select && a.SelectTuning == b.SelectTuning &&
		a.Seed == b.Seed && a.HandshakeTimeout == b.HandshakeTimeout && a.IdleTimeout == b.IdleTimeout &&
		a.CC.Same(b.CC) && a.LineRate == b.LineRate && a.LearnLineRate == b.LearnLineRate &&
		a.HostNoise == b.HostNoise && a.BaseRTT == b.BaseRTT && a.Protection == b.Protection &&
		a.MinRTO == b.MinRTO
}

// sameValue reports whether x and y are one value: both nil, or of one
// comparable type and equal (== on a type that is not comparable panics).
func sameValue(x, y any) bool {
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	t := reflect.TypeOf(x)
	return t == reflect.TypeOf(y) && t.Comparable() && x == y
}
