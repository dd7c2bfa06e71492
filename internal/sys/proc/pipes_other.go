//go:build !linux

package proc

import "os"

// outputPipes are the pipes of a step's stdout and stderr.
func outputPipes() (outR, outW, errR, errW *os.File, err error) {
	if outR, outW, err = os.Pipe(); err != nil {
		return nil, nil, nil, nil, err
	}
	if errR, errW, err = os.Pipe(); err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, nil, nil, err
	}
	return outR, outW, errR, errW, nil
}
