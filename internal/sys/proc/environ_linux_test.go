package proc

import (
	"bufio"
	"os/exec"
	"testing"
)

// A process in the middle of execve reads as having an empty environment
// (/proc/N/environ is empty, not an error). A step's daemon caught there,
// at `echo $$ > pidfile; exec sleep 300`, must still be seen to carry the
// step's token, or it outlives the step (seen in CI under load).
func TestTokenSeenWhileTheProcessExecs(t *testing.T) {
	const token = "t0k3n"
	misses := 0
	for range 40 {
		cmd := exec.Command("sh", "-c", "echo ready; exec sleep 30")
		cmd.Env = []string{TokenEnv + "=" + token, "PATH=/usr/bin:/bin"}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		bufio.NewReader(out).ReadString('\n') // the shell is about to exec
		for range 200 {
			if !hasToken(cmd.Process.Pid, token) {
				misses++
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	if misses > 0 {
		t.Errorf("the token was missed %d times while the process ran or exec'd", misses)
	}
}
