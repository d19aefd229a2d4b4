//go:build !linux

package main

import "errors"

// useHugePages is Linux's only: see hugepages_linux.go.
func useHugePages(int) error {
	return errors.New("transparent huge pages are asked for on Linux only")
}
