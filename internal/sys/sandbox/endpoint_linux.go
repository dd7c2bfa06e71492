package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The endpoint's protocol, on a SOCK_SEQPACKET pair: the helper sends a
// byte for each connection it accepted inside; runner connects to the
// endpoint on the host and answers a byte with the connected socket as
// SCM_RIGHTS, or without one when it could not connect. A socket made
// in the host's network namespace keeps working inside the sandbox's.

// forward makes the socket pair and serves the helper's requests until
// the sandbox is closed or the helper is gone.
func (s *Sandbox) forward(addr string) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sandbox: endpoint: %w", err)
	}
	own := os.NewFile(uintptr(fds[0]), "endpoint")
	s.fwdHelper = os.NewFile(uintptr(fds[1]), "endpoint-helper")
	c, err := net.FileConn(own)
	own.Close()
	if err != nil {
		return fmt.Errorf("sandbox: endpoint: %w", err)
	}
	uc := c.(*net.UnixConn)
	s.fwd = uc
	go func() {
		buf := make([]byte, 1)
		for {
			// Ends when the helper is gone, or Close closed uc.
			if n, err := uc.Read(buf); err != nil || n == 0 {
				return
			}
			var rights []byte
			var f *os.File
			if conn, err := net.DialTimeout("tcp", addr, 10*time.Second); err == nil {
				f, _ = conn.(*net.TCPConn).File()
				conn.Close()
				if f != nil {
					rights = unix.UnixRights(int(f.Fd()))
				}
			}
			_, _, err := uc.WriteMsgUnix([]byte{1}, rights, nil)
			if f != nil {
				f.Close()
			}
			if err != nil {
				return
			}
		}
	}()
	return nil
}

// listenEndpoint, in the helper, listens on the endpoint's address in the
// sandbox's network namespace and joins each connection to one runner
// makes on the host.
func listenEndpoint(cfg *config) error {
	ln, err := net.Listen("tcp", cfg.Endpoint)
	if err != nil {
		return &errHelper{"listening on the endpoint " + cfg.Endpoint, err}
	}
	c, err := net.FileConn(os.NewFile(uintptr(cfg.EndpointFD), "endpoint"))
	if err != nil {
		return &errHelper{"the endpoint's socket", err}
	}
	uc := c.(*net.UnixConn)
	var mu sync.Mutex
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			out, err := ask(uc)
			mu.Unlock()
			if err != nil {
				in.Close()
				continue
			}
			go join(in, out)
		}
	}()
	return nil
}

// ask has runner connect to the endpoint and returns that connection.
func ask(uc *net.UnixConn) (net.Conn, error) {
	if _, err := uc.Write([]byte{1}); err != nil {
		return nil, err
	}
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) == 0 {
		return nil, errors.New("the endpoint could not be reached")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) == 0 {
		return nil, errors.New("the endpoint could not be reached")
	}
	f := os.NewFile(uintptr(fds[0]), "endpoint-conn")
	defer f.Close()
	return net.FileConn(f)
}

// join copies both ways until both sides are done.
func join(a, b net.Conn) {
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Add(2)
	go half(a, b)
	go half(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}
