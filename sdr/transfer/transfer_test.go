package transfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/linkem"
	"github.com/sdrnet/sdrnet/sdr"
)

// msgSize makes blocks of 512 KiB: files of a few MiB have several.
const msgSize = 1 << 20

// connect dials a listener through the user-space link emulator with
// spec ("" for none) and returns the sender's and the receiver's ends.
func connect(t *testing.T, ctx context.Context, spec string) (a, b *sdr.Conn) {
	return connectWith(t, ctx, spec, &sdr.Config{Paths: 4, Rate: 1e9})
}

func connectWith(t *testing.T, ctx context.Context, spec string, cfg *sdr.Config) (a, b *sdr.Conn) {
	t.Helper()
	l, err := sdr.Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	addr := l.Addr().String()
	if spec != "" {
		lcfg, err := linkem.ParseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		proxy, err := linkem.Listen("127.0.0.1:0", addr, lcfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = proxy.Close() })
		addr = proxy.Addr().String()
	}
	a, err = sdr.Dial(ctx, addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	if b, err = l.Accept(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return a, b
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed)})
	_, _ = r.Read(b)
	return b
}

// failingReader fails every read past failAt, as a sender killed there.
type failingReader struct {
	data   []byte
	failAt int64
}

func (r *failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > r.failAt {
		return 0, errors.New("sender killed")
	}
	return bytes.NewReader(r.data).ReadAt(p, off)
}

type outcome struct {
	res Result
	err error
}

// run moves src to target over a fresh connection and returns both ends'
// results.
func run(t *testing.T, spec string, src Source, target Target) (sent, received outcome) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	a, b := connect(t, ctx, spec)
	done := make(chan outcome, 1)
	go func() {
		res, err := Receive(ctx, b, target, Options{MsgSize: msgSize, Depth: 4})
		done <- outcome{res, err}
	}()
	res, err := Send(ctx, a, src, Options{MsgSize: msgSize, Depth: 4})
	if err != nil {
		_ = a.CloseWithError(sdr.CodeAborted, "sender stopped: "+err.Error())
	}
	return outcome{res, err}, <-done
}

func checkFile(t *testing.T, name string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(name)
	if err != nil || sha256.Sum256(got) != sha256.Sum256(want) {
		t.Fatalf("%s: %d bytes (%v), want %d identical", name, len(got), err, len(want))
	}
	for _, left := range []string{".partial", ".partial.state", ".partial.state.tmp"} {
		if _, err := os.Stat(name + left); err == nil {
			t.Errorf("%s%s left behind", name, left)
		}
	}
}

// TestTransferVerified moves files through loss, reordering and
// duplication and checks every byte on disk.
func TestTransferVerified(t *testing.T) {
	for _, size := range []int{0, 1, 6<<20 + 123, 2 << 20} {
		data := randomBytes(size, 1)
		out := filepath.Join(t.TempDir(), "out")
		target, err := OpenFile(out)
		if err != nil {
			t.Fatal(err)
		}
		src := Source{R: bytes.NewReader(data), Size: int64(size), ModTime: time.Unix(1e9, 0)}
		sent, received := run(t, "delay=1ms,loss=1%,reorder=0.02/1ms,dup=0.01", src, target)
		if sent.err != nil || received.err != nil {
			t.Fatalf("%d bytes: send %v, receive %v", size, sent.err, received.err)
		}
		if sent.res.Moved != int64(size) || received.res.Moved != int64(size) || received.res.Resumed != 0 {
			t.Errorf("%d bytes: sent %+v, received %+v", size, sent.res, received.res)
		}
		checkFile(t, out, data)
	}
}

// TestResume cuts a transfer short, then reruns it: only the missing
// blocks move, and the file ends byte-exact.
func TestResume(t *testing.T) {
	data := randomBytes(8<<20+7, 2)
	mtime := time.Unix(1e9, 0)
	out := filepath.Join(t.TempDir(), "out")
	target, err := OpenFile(out)
	if err != nil {
		t.Fatal(err)
	}
	cut := &failingReader{data: data, failAt: 5 << 20}
	_, received := run(t, "", Source{R: cut, Size: int64(len(data)), ModTime: mtime}, target)
	var inc *sdr.IncompleteError
	if !errors.As(received.err, &inc) || inc.Received == 0 || inc.Received > 5<<20 || inc.Declared != int64(len(data)) {
		t.Fatalf("cut short: %v, want an incomplete error with some of the first 5 MiB held", received.err)
	}
	if _, err := os.Stat(out + ".partial.state"); err != nil {
		t.Fatalf("no bitmap kept: %v", err)
	}
	// The same command again.
	target, err = OpenFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sent, received := run(t, "loss=1%", Source{R: bytes.NewReader(data), Size: int64(len(data)), ModTime: mtime}, target)
	if sent.err != nil || received.err != nil {
		t.Fatalf("resume: send %v, receive %v", sent.err, received.err)
	}
	if received.res.Resumed != inc.Received || sent.res.Resumed != inc.Received || sent.res.Moved != int64(len(data))-inc.Received {
		t.Errorf("resume: sent %+v, received %+v; held %d before", sent.res, received.res, inc.Received)
	}
	checkFile(t, out, data)
}

// cutShort leaves out.partial with the first MiBs of data held. The
// sender stops after 3 MiB; on a loaded host its abort can overtake
// every block in flight, leaving nothing held and no bitmap, so the cut
// is tried again until the receiver kept some.
func cutShort(t *testing.T, out string, data []byte, mtime time.Time) {
	t.Helper()
	for try := 1; ; try++ {
		target, err := OpenFile(out)
		if err != nil {
			t.Fatal(err)
		}
		_, received := run(t, "", Source{R: &failingReader{data: data, failAt: 3 << 20}, Size: int64(len(data)), ModTime: mtime}, target)
		if !errors.Is(received.err, sdr.ErrIncomplete) {
			t.Fatalf("cut short: %v", received.err)
		}
		if _, err := os.Stat(out + ".partial.state"); err == nil {
			return
		} else if try == 5 {
			t.Fatalf("cut short five times, and no bitmap was kept: %v", err)
		}
		t.Logf("cut short, try %d: the receiver kept no block; again", try)
		leftovers, _ := filepath.Glob(out + ".partial*")
		for _, f := range leftovers {
			_ = os.RemoveAll(f)
		}
	}
}

// TestResumeNotMixed: a partial file that is not of the sender's file is
// set aside, named, and kept; the new file is all the sender's.
func TestResumeNotMixed(t *testing.T) {
	data := randomBytes(6<<20, 3)
	mtime := time.Unix(1e9, 0)
	for _, tt := range []struct {
		name  string
		src   []byte
		mtime time.Time
		spoil func(out string)
		why   string
	}{
		{"modified since", data, mtime.Add(time.Second), nil, "another file"},
		{"same size and time, other bytes", randomBytes(6<<20, 4), mtime, nil, "does not hash to its blocks"},
		{"damaged on disk", data, mtime, func(out string) {
			f, _ := os.OpenFile(out+".partial", os.O_RDWR, 0)
			_, _ = f.WriteAt([]byte{0xff ^ data[100]}, 100)
			f.Close()
		}, "does not hash to its blocks"},
		{"damaged bitmap", data, mtime, func(out string) { _ = os.WriteFile(out+".partial.state", []byte("SDRSTATE junk"), 0o644) }, "damaged"},
		{"no bitmap", data, mtime, func(out string) { _ = os.Remove(out + ".partial.state") }, "no bitmap"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			cutShort(t, out, data, mtime)
			before, _ := os.ReadFile(out + ".partial")
			if tt.spoil != nil {
				tt.spoil(out)
				before, _ = os.ReadFile(out + ".partial")
			}
			target, err := OpenFile(out)
			if err != nil {
				t.Fatal(err)
			}
			sent, received := run(t, "", Source{R: bytes.NewReader(tt.src), Size: int64(len(tt.src)), ModTime: tt.mtime}, target)
			if sent.err != nil || received.err != nil || received.res.Resumed != 0 {
				t.Fatalf("send %v, receive %v, %+v", sent.err, received.err, received.res)
			}
			checkFile(t, out, tt.src)
			if !strings.Contains(target.SetAside(), tt.why) || !strings.Contains(target.SetAside(), out+".partial.stale") {
				t.Errorf("set aside: %q, want the name and %q", target.SetAside(), tt.why)
			}
			if kept, err := os.ReadFile(out + ".partial.stale"); err != nil || !bytes.Equal(kept, before) {
				t.Errorf("the old partial file was not kept whole: %v", err)
			}
		})
	}
}

// TestOneReceiverPerFile: a second receiver on the same output refuses
// at once.
func TestOneReceiverPerFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	first, err := OpenFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(out); !errors.Is(err, ErrBusy) {
		t.Fatalf("second receiver: %v, want ErrBusy", err)
	}
	first.Close()
	if _, err := os.Stat(out + ".partial"); !os.IsNotExist(err) {
		t.Errorf("an empty partial file left behind: %v", err)
	}
	second, err := OpenFile(out)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	second.Close()
}

// TestWriterTarget: a writer takes the file in order and is verified.
func TestWriterTarget(t *testing.T) {
	data := randomBytes(3<<20+5, 5)
	var got bytes.Buffer
	sent, received := run(t, "loss=1%,reorder=0.02/1ms", Source{R: bytes.NewReader(data), Size: int64(len(data))}, Writer(&got))
	if sent.err != nil || received.err != nil || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("send %v, receive %v, %d bytes", sent.err, received.err, got.Len())
	}
}

// TestFileChangedWhileSent: a file that shrinks after its offer fails
// the send with the reason, and the receiver keeps what it had.
func TestFileChangedWhileSent(t *testing.T) {
	data := randomBytes(4<<20, 6)
	out := filepath.Join(t.TempDir(), "out")
	target, err := OpenFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sent, received := run(t, "", Source{R: bytes.NewReader(data[:3<<20]), Size: int64(len(data))}, target)
	if sent.err == nil || !strings.Contains(sent.err.Error(), "changed while being sent") {
		t.Errorf("send: %v", sent.err)
	}
	if !errors.Is(received.err, sdr.ErrIncomplete) {
		t.Errorf("receive: %v", received.err)
	}
}

func TestBlockFor(t *testing.T) {
	for _, tt := range []struct {
		size    int64
		msgSize int
		want    uint32
	}{
		{0, DefaultMsgSize, BlockSize},
		{1 << 30, DefaultMsgSize, BlockSize},
		{1 << 40, DefaultMsgSize, 4 << 20}, // 2^16 blocks would be 16 MiB, more than a DATA holds
		{1 << 20, 1 << 20, 512 << 10},
		{1 << 20, 5000, 4096},
	} {
		got, err := blockFor(tt.size, tt.msgSize)
		if err != nil || got != tt.want {
			t.Errorf("blockFor(%d, %d) = %d, %v; want %d", tt.size, tt.msgSize, got, err, tt.want)
		}
	}
	if _, err := blockFor(1<<20, 4000); err == nil {
		t.Error("a message too small for a block accepted")
	}
	if _, err := blockFor(1<<50, 1<<20); err == nil {
		t.Error("more than maxBlocks accepted")
	}
}

// TestUnrepairedLossEnds: under --scheme none nothing lost is resent, so
// the transfer cannot complete; both ends must end within the stall time
// and say what is missing, not hang on keepalives.
func TestUnrepairedLossEnds(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	a, b := connectWith(t, ctx, "loss=1%", &sdr.Config{Scheme: "none", Rate: 1e9})
	data := randomBytes(4<<20, 7)
	opt := Options{MsgSize: msgSize, Stall: 500 * time.Millisecond}
	done := make(chan error, 1)
	go func() {
		_, err := Receive(ctx, b, Writer(io.Discard), opt)
		done <- err
	}()
	start := time.Now()
	_, sendErr := Send(ctx, a, Source{R: bytes.NewReader(data), Size: int64(len(data))}, opt)
	recvErr := <-done
	if !errors.Is(recvErr, sdr.ErrIncomplete) || !strings.Contains(recvErr.Error(), "no data arrived for 500ms") || !strings.Contains(recvErr.Error(), "blocks missing") {
		t.Errorf("receiver: %v", recvErr)
	}
	if sendErr == nil {
		t.Error("sender succeeded")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v to end", d)
	}
}

// TestSenderStalls: a receiver that answers the offer and then takes no
// data (it posts no buffer) ends the sender after the stall time.
func TestSenderStalls(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	a, b := connect(t, ctx, "")
	go func() {
		r, err := b.PostRecv(make([]byte, offerLen))
		if err != nil {
			return
		}
		n, _ := r.Wait(ctx)
		o, _ := parseOffer(r.Buffer()[:n])
		st := state{Have: newBitmap(o.blocks()), Digests: make([][32]byte, o.blocks())}
		_, _ = b.PostRecv(make([]byte, planLen))
		_ = b.Send(ctx, st.encode())
		<-ctx.Done()
	}()
	data := randomBytes(2<<20, 8)
	_, err := Send(ctx, a, Source{R: bytes.NewReader(data), Size: int64(len(data))}, Options{MsgSize: msgSize, Stall: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "nothing sent or acknowledged for 500ms") {
		t.Fatalf("send: %v", err)
	}
}
