//go:build !linux

package sdr

import "time"

// fineWaker is Linux's (waker_linux.go); elsewhere the loop's Go timer
// alone times its waits.
type fineWaker struct{}

func newFineWaker(<-chan struct{}) *fineWaker { return &fineWaker{} }

func (*fineWaker) wake(time.Duration) {}

func (*fineWaker) ticks() <-chan struct{} { return nil }
