// Package web holds the console's built files (web/dist, made by `npm run
// build` and committed), embedded in the binary: a fresh clone serves the
// console without Node.
package web

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Dist is the built console: index.html and assets/.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the path is a constant
	}
	return sub
}
