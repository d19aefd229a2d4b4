package linkem_test

import (
	"fmt"

	"github.com/sdrnet/sdrnet/internal/linkem"
)

func ExampleParseSpec() {
	cfg, err := linkem.ParseSpec("delay=25ms,rate=1Gbps,loss=1e-3,rev.delay=5ms path[3]:fail=2s-5s")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Default.Forward.Delay, cfg.Default.Reverse.Delay, cfg.Default.Forward.Rate)
	fmt.Println(cfg.Paths[3].Forward.Down)
	fmt.Println(cfg)

	_, err = linkem.ParseSpec("delay=25ms,loss=5")
	fmt.Println(err)
	// Output:
	// 25ms 5ms 1e+09
	// [2s-5s]
	// fwd.delay=25ms,rev.delay=5ms,rate=1Gbit/s,loss=0.001 path[3]:fail=2s-5s
	// linkem: spec item "loss=5": loss: want a probability in [0, 1] like 0.001, 1e-3 or 0.1%: "5" is outside [0, 1]
}
