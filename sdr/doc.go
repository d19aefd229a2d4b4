// Package sdr is sdrnet's transport API: SDR-RDMA style messaging over
// UDP. A receiver posts a buffer per message and sees a bitmap of which
// chunks arrived; the sender's reliability scheme (selective repeat,
// erasure coding, go-back-N or none) repairs losses; a connection can
// spray its packets over up to 128 UDP source ports so ECMP networks
// spread it over many paths.
//
//	l, _ := sdr.Listen(":4793", nil)
//	conn, _ := l.Accept(ctx)
//	r, _ := conn.PostRecv(buf)
//	n, _ := r.Wait(ctx)
//
//	conn, _ := sdr.Dial(ctx, "192.0.2.1:4793", &sdr.Config{Scheme: "ec:32,8", Paths: 16})
//	conn.Send(ctx, msg)
//
// Each endpoint runs the sans-IO protocol core of internal/core on one
// goroutine that owns its sockets; the API hands it requests.
package sdr
