package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"slipway/internal/agenttest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

// TestAgentsCannotReachTheHub: a container on the agent network gets
// nothing from the hub's port, neither through its network's gateway nor
// through the host's own address, while the hub answers everyone else.
func TestAgentsCannotReachTheHub(t *testing.T) {
	host := agenttest.DockerHost(t)
	network := "slipway-test-guard-" + ids.RandomHex(3)
	cfg := testConfig(t, dbtest.EmptyTarget(t, db.SQLite), map[string]string{"SERVICE_AGENT_BACKEND": "docker", "DOCKER_HOST": host,
		"AGENT_NETWORK": network})
	logs := &logBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	d, err := Boot(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	s, err := New(cfg, log, d)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", ":0") // every interface, as a server listens
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, nil, nil) }()
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-done
		_, _ = cli.NetworkRemove(context.Background(), network, client.NetworkRemoveOptions{})
		cli.Close()
	})
	// The hub answers from here.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err == nil && resp.StatusCode == 200 {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub does not answer locally: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	n, err := cli.NetworkInspect(context.Background(), network, client.NetworkInspectOptions{})
	if err != nil {
		t.Fatalf("the agent network was not created at start: %v", err)
	}
	gateway := n.Network.IPAM.Config[0].Gateway.String()
	// The host's address on its first non-loopback interface.
	var hostIP string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() && !strings.HasPrefix(ipn.IP.String(), "172.") {
			hostIP = ipn.IP.String()
			break
		}
	}
	script := ""
	for _, target := range []string{gateway, hostIP} {
		if target == "" {
			continue
		}
		script += fmt.Sprintf(`printf 'GET /readyz HTTP/1.0\r\n\r\n' | nc -w 3 %s %d; echo "[done %s]";`, target, port, target)
	}
	ctx2 := context.Background()
	c, err := cli.ContainerCreate(ctx2, client.ContainerCreateOptions{
		Config:     &container.Config{Image: agenttest.TestImage, Cmd: []string{"sh", "-c", script}},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(network)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(ctx2, c.ID, client.ContainerRemoveOptions{Force: true})
	if _, err := cli.ContainerStart(ctx2, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait := cli.ContainerWait(ctx2, c.ID, client.ContainerWaitOptions{})
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("the probe container did not finish")
	}
	rc, err := cli.ContainerLogs(ctx2, c.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(rc)
	rc.Close()
	out := string(raw)
	if !strings.Contains(out, "[done "+gateway+"]") {
		t.Fatalf("the probe did not run:\n%s", out)
	}
	if strings.Contains(out, "HTTP/1.") || strings.Contains(out, `"status":"ok"`) {
		t.Fatalf("an agent reached the hub:\n%s", out)
	}
	if !strings.Contains(logs.String(), "refused a connection from an agent network") {
		t.Fatalf("no refusal was logged (did the probe reach the port at all?):\n%s\n%s", out, logs.String())
	}
}
