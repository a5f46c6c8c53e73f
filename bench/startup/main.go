// Command startup measures two figures of a slipway binary: time from
// process start to the first 200 from /readyz on a fresh SQLite data dir
// (median of -n runs), and resident memory once the started server idles.
//
//	go build -o /tmp/slipway ./cmd/slipway
//	go run ./bench/startup -bin /tmp/slipway -n 30
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	bin := flag.String("bin", "", "slipway binary to measure")
	n := flag.Int("n", 30, "number of fresh starts")
	idle := flag.Duration("idle", 5*time.Second, "how long the server idles before its RSS is read")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: startup -bin PATH [-n 30] [-idle 5s]")
		os.Exit(2)
	}

	var times []time.Duration
	for i := 0; i < *n; i++ {
		d, cmd, port, err := startOnce(*bin)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		times = append(times, d)
		if i == *n-1 {
			time.Sleep(*idle)
			// A few requests first, so the figure includes a warmed-up handler path.
			for range 100 {
				if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/livez", port)); err == nil {
					resp.Body.Close()
				}
			}
			time.Sleep(*idle)
			fmt.Printf("idle RSS after %v: %s\n", 2**idle, rss(cmd.Process.Pid))
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	slices.Sort(times)
	fmt.Printf("start to /readyz 200 on a fresh SQLite data dir, %d runs: median %v, p90 %v, min %v, max %v\n",
		len(times), times[len(times)/2].Round(time.Millisecond/10), times[len(times)*9/10].Round(time.Millisecond/10),
		times[0].Round(time.Millisecond/10), times[len(times)-1].Round(time.Millisecond/10))
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func startOnce(bin string) (time.Duration, *exec.Cmd, int, error) {
	dir, err := os.MkdirTemp("", "slipway-startup-")
	if err != nil {
		return 0, nil, 0, err
	}
	defer os.RemoveAll(dir)
	port, err := freePort()
	if err != nil {
		return 0, nil, 0, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SERVER_PORT=" + strconv.Itoa(port),
		"SERVICE_DATA_DIR=" + filepath.Join(dir, "data"), "SERVICE_SHUTDOWN_LB_DELAY_SECS=0"}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, nil, 0, err
	}
	for time.Since(begin) < 30*time.Second {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return time.Since(begin), cmd, port, nil
			}
		}
		time.Sleep(500 * time.Microsecond)
	}
	cmd.Process.Kill()
	return 0, nil, 0, fmt.Errorf("not ready within 30s")
}

func rss(pid int) string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "VmRSS:") {
			return strings.TrimSpace(strings.TrimPrefix(sc.Text(), "VmRSS:"))
		}
	}
	return "unknown"
}
