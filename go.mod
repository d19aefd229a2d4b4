module github.com/sdrnet/sdrnet

go 1.26

require (
	github.com/klauspost/cpuid/v2 v2.3.0 // indirect
	github.com/klauspost/reedsolomon v1.14.2 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
