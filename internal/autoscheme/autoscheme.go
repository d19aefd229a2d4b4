// Package autoscheme is sdrnet's scheme "auto": it picks each message's
// reliability scheme, SR-NACK or a Reed-Solomon code with a chosen (k,m),
// as the one internal/model predicts to complete soonest at the sender,
// given the size and what the connection has measured (RTT, rate, loss).
// A message sent while others are under way (a stream's) is costed by
// the goodput it leaves the connection instead (pipelined).
//
// Decisions are cached per bucket of the inputs (an eighth of a decade of
// loss rate, a quarter octave of size, an eighth of an octave of RTT and
// rate), so a connection whose measurements do not move pays one map
// lookup per message, and one whose measurements move is re-decided as they
// cross bucket borders.
package autoscheme

import (
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/sdrnet/sdrnet/internal/model"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// Name is how scenarios, the CLI and sdr.Config spell the scheme.
const Name = "auto"

// Candidate codes: k = 32 data chunks with 2 to 16 parity chunks, from
// light protection for rare losses to heavy for a lossy path.
var codeParity = []int{2, 4, 8, 16}

const codeData = 32

// PriorLoss is the loss rate assumed with no evidence, and the most a
// small sample's pessimism may assume: the top of the range SDR-RDMA
// evaluates.
const PriorLoss = 1e-2

// MaxLoss bounds the loss rate given to the model (beyond it the model's
// chunk drop probability leaves its range).
const MaxLoss = 0.2

// DefaultRate is the injection rate assumed where the connection knows
// none (as sdr's DefaultLineRate).
const DefaultRate = 10e9

// TieTolerance: a scheme with less overhead (SR-NACK before any code,
// fewer parity chunks before more) is preferred while its predicted mean
// is within this fraction of the best; it saves bandwidth for nothing.
const TieTolerance = 0.005

// headerBytes is what the model charges per packet: the SDR header and
// Ethernet, IPv4 and UDP around it.
const headerBytes = wire.MessageLen + 66

// Chooser is a reliability.Chooser; it is safe for concurrent use.
type Chooser struct {
	schemes []reliability.Scheme // SR-NACK, then codes by increasing overhead
	names   []string

	// background: a decision not cached yet is worked out on another
	// goroutine, and the message gets the last decision made meanwhile
	// (five model evaluations take up to a few milliseconds at 1 GiB,
	// which a real connection's event loop should not wait for).
	background bool
	busy       sync.WaitGroup // background decisions under way

	mu      sync.Mutex
	cache   map[bucket]int  // index into schemes
	pending map[bucket]bool // being decided in the background
	last    int             // the latest decision
	lastErr error
}

// bucket is a cell of the quantized inputs.
type bucket struct {
	loss, size, rtt, rate int16
	depth                 int16 // log2 of Conditions.Depth, rounded down
	mtu, chunk            int32
}

// New returns a Chooser that decides on the caller's goroutine, so that
// a simulation stays deterministic.
func New() *Chooser {
	ch := &Chooser{cache: map[bucket]int{}, pending: map[bucket]bool{}}
	ch.add(reliability.SelectiveRepeat{NACK: true})
	for _, m := range codeParity {
		code, err := reliability.NewMDS(codeData, m)
		if err != nil {
			panic(err) // a constant table
		}
		ch.add(reliability.NewErasureCoding(code, 0))
	}
	return ch
}

// NewBackground returns a Chooser for real connections: Choose never
// waits for the model (see Chooser.background).
func NewBackground() *Chooser {
	ch := New()
	ch.background = true
	return ch
}

func (ch *Chooser) add(s reliability.Scheme) {
	ch.schemes = append(ch.schemes, s)
	ch.names = append(ch.names, reliability.Name(s))
}

// Parse reads a scheme name as the CLI, scenarios and sdr.Config spell
// it: "auto" (auto true, and SR-NACK, the scheme of messages a chooser is
// not asked about), or any name reliability.Parse reads.
func Parse(s string) (scheme reliability.Scheme, auto bool, err error) {
	if s == Name {
		return reliability.SelectiveRepeat{NACK: true}, true, nil
	}
	if scheme, err = reliability.Parse(s); err != nil {
		return nil, false, fmt.Errorf("%w (or %s)", err, Name)
	}
	return scheme, false, nil
}

// AssumedLoss is the loss rate a decision rests on: the measured rate, or
// where the evidence is thin a pessimistic one, (lost+1)/(sent+1), but no
// more than PriorLoss for pessimism's sake. Choosing on it costs a little
// parity while little is known, and saves SR's retries where a lossy path
// has not shown its losses yet.
func AssumedLoss(c reliability.Conditions) float64 {
	measured := c.LossRate()
	upper := min((c.Lost+1)/(c.Sent+1), PriorLoss)
	return min(max(measured, upper), MaxLoss)
}

// Choose implements reliability.Chooser.
func (ch *Chooser) Choose(c reliability.Conditions) reliability.Scheme {
	b := bucketOf(c)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	i, ok := ch.cache[b]
	switch {
	case ok:
	case !ch.background:
		i = ch.decide(b)
		ch.cache[b] = i
	default:
		i = ch.last
		if !ch.pending[b] {
			ch.pending[b] = true
			ch.busy.Add(1)
			go func() {
				defer ch.busy.Done()
				j, err := ch.evaluate(b)
				ch.mu.Lock()
				defer ch.mu.Unlock()
				ch.cache[b], ch.last = j, j
				delete(ch.pending, b)
				if err != nil {
					ch.lastErr = err
				}
			}()
		}
	}
	ch.last = i
	return ch.schemes[i]
}

// Wait blocks until no decision is being made in the background (tests).
func (ch *Chooser) Wait() { ch.busy.Wait() }

// Err returns the last error the model gave, if any (a candidate it could
// not evaluate is skipped).
func (ch *Chooser) Err() error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.lastErr
}

// Predictions returns what every candidate costs a message under c, by
// name, as Choose weighs them: the model's mean completion time at the
// sender, or where other messages are under way, pipelined's.
func (ch *Chooser) Predictions(c reliability.Conditions) map[string]monotime.Duration {
	b := bucketOf(c)
	out := map[string]monotime.Duration{}
	for i, s := range ch.schemes {
		if pr, err := predict(b, s); err == nil {
			out[ch.names[i]] = cost(pr, b)
		}
	}
	return out
}

// cost is what a message predicted pr costs the connection: its mean
// completion time alone; with depth messages under way, the longer of
// the link time it takes (its injection and expected resends) and its
// completion time over the depth, for the others fill the link while it
// waits for its repair.
func cost(pr model.Prediction, b bucket) monotime.Duration {
	if b.depth <= 0 {
		return pr.Mean
	}
	return max(wireTime(pr, b.dropProb()), pr.Mean>>b.depth)
}

// wireTime is how long a message holds the sender's link, its packets
// lost at rate p: its injection and what it is expected to resend.
// SR-NACK resends each packet until it arrives (1/(1-p) sends per
// packet); a code resends only on a fallback.
func wireTime(pr model.Prediction, p float64) monotime.Duration {
	inj := float64(pr.Injection)
	if pr.SubMessages > 0 { // a code
		pkt := float64(pr.TInj) / float64(max(pr.PacketsPerChunk, 1))
		return monotime.Duration(inj + pr.PFallback*float64(pr.RepairPackets)*pkt)
	}
	return monotime.Duration(inj / (1 - p))
}

// decide is evaluate with ch.mu held.
func (ch *Chooser) decide(b bucket) int {
	i, err := ch.evaluate(b)
	if err != nil {
		ch.lastErr = err
	}
	return i
}

// evaluate weighs every candidate for bucket b; it returns SR-NACK if the
// model can evaluate none, and the error of a candidate it could not.
func (ch *Chooser) evaluate(b bucket) (int, error) {
	means := make([]float64, len(ch.schemes))
	best := math.Inf(1)
	var lastErr error
	for i, s := range ch.schemes {
		pr, err := predict(b, s)
		if err != nil {
			lastErr = err
			means[i] = math.Inf(1)
			continue
		}
		means[i] = float64(cost(pr, b))
		best = min(best, means[i])
	}
	for i, m := range means {
		if m <= best*(1+TieTolerance) {
			return i, lastErr
		}
	}
	return 0, lastErr
}

// Quantization steps per decade (loss) and per octave (the rest).
const (
	lossSteps = 8
	sizeSteps = 4
	timeSteps = 8
)

func bucketOf(c reliability.Conditions) bucket {
	// AssumedLoss is never zero: (lost+1)/(sent+1) > 0.
	b := bucket{loss: int16(math.Round(math.Log10(AssumedLoss(c)) * lossSteps)), mtu: int32(c.MTU), chunk: int32(c.ChunkBytes)}
	b.size = int16(math.Round(math.Log2(float64(max(c.Size, 1))) * sizeSteps))
	b.rtt = int16(math.Round(math.Log2(float64(max(c.RTT, 1))) * timeSteps))
	rate := c.Rate
	if rate <= 0 {
		rate = DefaultRate
	}
	b.rate = int16(math.Round(math.Log2(rate) * timeSteps))
	b.depth = int16(bits.Len(uint(max(c.Depth, 1))) - 1)
	return b
}

// dropProb is the packet loss rate at the centre of bucket b.
func (b bucket) dropProb() float64 { return math.Pow(10, float64(b.loss)/lossSteps) }

// predict evaluates scheme s at the centre of bucket b.
func predict(b bucket, s reliability.Scheme) (model.Prediction, error) {
	p := model.Params{
		MessageBytes:   max(int64(math.Round(math.Exp2(float64(b.size)/sizeSteps))), 1),
		ChunkBytes:     int(b.chunk),
		MTU:            int(b.mtu),
		HeaderBytes:    headerBytes,
		RateBitsPerSec: math.Exp2(float64(b.rate) / timeSteps),
		RTT:            monotime.Duration(math.Exp2(float64(b.rtt) / timeSteps)),
		DropProb:       b.dropProb(),
		Decode:         model.DecodeStripe,
		Retry:          model.RetryPacket,
		AtSender:       true,
	}
	if code := s.Code(); code != nil {
		p.Scheme, p.K, p.M = model.ECMDS, code.K(), code.M()
	} else {
		// SR-NACK under the paper's timers (a lost packet costs a retry
		// period of RTT + T_INJ): its cost is bounded (milliseconds at
		// 1 GiB), while the implementation model's grows with the
		// injection time over the NACK delay (174 ms for 1 MiB paced at
		// 400 Mbit/s over a 50 us RTT, minutes at 1 GiB).
		p.Scheme, p.Timers = model.SRNACK, model.TimersPaper
	}
	return model.Predict(p)
}

var _ reliability.Chooser = (*Chooser)(nil)
