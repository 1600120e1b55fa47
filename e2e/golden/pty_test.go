//go:build demo && cgo && linux

package golden

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: its master (the test's end) and its slave (the process's
// terminal), 120 columns wide.
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlock the pty: %w", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("the pty's number: %w", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

// runOnTerminal runs cmd with stdin and stderr on a terminal and stdout to a pipe, as an
// operator's `zbrecover … > out` does; when stderr shows a question ("… [y/N] "), it
// types answer and Enter. It returns the exit code, stdout, and what the terminal showed
// (its CR LF line ends read as LF).
func runOnTerminal(cmd *exec.Cmd, answer string) (int, string, string, error) {
	master, slave, err := openPTY()
	if err != nil {
		return -1, "", "", err
	}
	defer master.Close()
	var out bytes.Buffer
	cmd.Stdin, cmd.Stderr, cmd.Stdout = slave, slave, &out
	if err := cmd.Start(); err != nil {
		slave.Close()
		return -1, "", "", err
	}
	slave.Close()
	var (
		mu     sync.Mutex
		screen bytes.Buffer
		done   = make(chan struct{})
	)
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		answered := false
		for {
			n, err := master.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			ask := !answered && strings.Contains(screen.String(), "[y/N] ")
			mu.Unlock()
			if ask {
				answered = true
				_, _ = io.WriteString(master, answer+"\n")
			}
			if err != nil {
				return // EIO once the process has closed the terminal
			}
		}
	}()
	werr := cmd.Wait()
	<-done
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee) && ee.Exited():
		code = ee.ExitCode()
	case werr != nil:
		return -1, out.String(), screen.String(), werr
	}
	return code, out.String(), strings.ReplaceAll(screen.String(), "\r\n", "\n"), nil
}
