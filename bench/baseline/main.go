// Command baseline is a bare net/http server answering /livez like slipway
// does, with no middleware: the ceiling the /livez figure is compared with.
package main

import (
	"net/http"
	"os"
)

func main() {
	body := []byte(`{"status":"ok"}` + "\n")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Content-Type"] = []string{"application/json"}
		w.Write(body)
	})
	addr := ":18090"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	http.ListenAndServe(addr, mux)
}
