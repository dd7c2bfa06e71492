package sandbox

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestEndpoint: without network, the policy's endpoint (a server on the
// host's loopback) answers at the same address inside, many times over,
// while another server on the host's loopback stays out of reach.
func TestEndpoint(t *testing.T) {
	serve := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s got %q", name, body)
		}))
	}
	proxy, other := serve("proxy"), serve("other")
	defer proxy.Close()
	defer other.Close()
	proxyAddr := strings.TrimPrefix(proxy.URL, "http://")
	bash := systemTool(t, "bash")
	work := t.TempDir()
	// A request by bash's /dev/tcp: no HTTP client needed in the sandbox.
	get := func(url string) string {
		hostPort := strings.Replace(strings.TrimPrefix(url, "http://"), ":", "/", 1)
		return bash + ` -c 'exec 3<>/dev/tcp/` + hostPort + ` && printf "POST / HTTP/1.0\r\nContent-Length: 4\r\n\r\nping" >&3 && sed -n "\$p" <&3 && echo'`
	}
	for _, tc := range []struct {
		name   string
		policy Policy
		script string
		want   string // in stdout
		code   int
	}{
		{name: "the endpoint answers, three times", policy: Policy{Write: []string{work}, Endpoint: proxyAddr},
			script: get(proxy.URL) + " && " + get(proxy.URL) + " && " + get(proxy.URL),
			want:   strings.Repeat("proxy got \"ping\"\n", 3)},
		{name: "another port of the host's loopback does not", policy: Policy{Write: []string{work}, Endpoint: proxyAddr},
			script: get(other.URL), code: 1},
		{name: "another host does not", policy: Policy{Write: []string{work}, Endpoint: proxyAddr},
			script: get("http://10.255.255.1:80"), code: 1},
		{name: "without the endpoint, neither answers", policy: Policy{Write: []string{work}},
			script: get(proxy.URL), code: 1},
		{name: "control: with network, the other answers", policy: Policy{Write: []string{work}, Network: true, Endpoint: proxyAddr},
			script: get(other.URL), want: "other got \"ping\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := run(t, tc.policy, work, tc.script)
			if code != tc.code || out != tc.want {
				t.Errorf("exit %d, stdout %q; want exit %d, %q\n%s", code, out, tc.code, tc.want, errOut)
			}
		})
	}
}
