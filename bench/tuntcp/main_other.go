//go:build !linux

// Command tuntcp needs Linux (TUN devices and network namespaces); see
// main.go.
package main

import "fmt"

func main() { fmt.Println("tuntcp: skip: the TUN tunnel needs Linux") }
