package proc

import (
	"os"
	"syscall"
)

// outputPipes are the pipes of a step's stdout and stderr. Only the read
// ends go into Go's poller: the write ends are handed to the child and
// closed, so they are made blocking from the start. os.Pipe would put
// both in the poller, and exec then set the write ends back to blocking:
// six system calls a pipe that a step paid for nothing.
func outputPipes() (outR, outW, errR, errW *os.File, err error) {
	if outR, outW, err = outputPipe(); err != nil {
		return nil, nil, nil, nil, err
	}
	if errR, errW, err = outputPipe(); err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, nil, nil, err
	}
	return outR, outW, errR, errW, nil
}

func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := syscall.SetNonblock(p[0], true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	// A non-blocking descriptor goes into the poller; a blocking one not.
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
