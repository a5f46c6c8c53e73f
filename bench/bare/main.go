// Command bare serves a directory with net/http's file server and nothing
// else: the baseline bench/apps.sh compares a deployed app's static files
// with (same file, same client).
//
//	go run ./bench/bare -addr 127.0.0.1:18099 -dir /path/to/files
package main

import (
	"flag"
	"log"
	"net/http"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18099", "listen address")
	dir := flag.String("dir", ".", "directory to serve")
	flag.Parse()
	log.Fatal(http.ListenAndServe(*addr, http.FileServer(http.Dir(*dir))))
}
