// Package codefiles holds the text files code runs read: a workspace's code
// library, mounted read-only into every code run at $SLIPWAY_LIB
// (/slipway-lib), and the files of one code node of a workflow, mounted
// read-only into that node's runs at $SLIPWAY_FILES (/slipway-files).
// Paths are relative, slash-separated and normalised; sizes are capped per
// file and per set (one node's files, or the library).
package codefiles

import "time"

// Limits of a set of files (one code node's, or the workspace's library).
const (
	MaxFileBytes  = 256 << 10 // one file's content
	MaxFiles      = 200       // files in a set
	MaxTotalBytes = 4 << 20   // all the contents of a set
	MaxPathBytes  = 255
	MaxSegments   = 8
)

// FileInfo is a file as lists show it: without its content.
type FileInfo struct {
	Path      string    `json:"path" doc:"Relative, slash-separated, normalised"`
	Size      int64     `json:"size" doc:"Bytes of content (UTF-8)"`
	SHA256    string    `json:"sha256" doc:"Hex SHA-256 of the content; PUT takes it back in If-Match"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// File is one file with its content.
type File struct {
	Path      string    `json:"path" doc:"Relative, slash-separated, normalised"`
	Size      int64     `json:"size" doc:"Bytes of content (UTF-8)"`
	SHA256    string    `json:"sha256" doc:"Hex SHA-256 of the content; PUT takes it back in If-Match"`
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Info is the file without its content.
func (f *File) Info() *FileInfo {
	return &FileInfo{Path: f.Path, Size: f.Size, SHA256: f.SHA256, CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt}
}

// FileInput is the body of a PUT: the file's path and its whole content.
type FileInput struct {
	Path    string `json:"path" doc:"Relative, slash-separated; normalised (path.Clean): no leading /, no .. segment, no backslash or control character, at most 8 segments and 255 bytes"`
	Content string `json:"content" doc:"UTF-8 text without NUL, at most 262144 bytes (256 KiB); a set holds at most 200 files and 4 MiB"`
}

// scope names a set of files: the workspace's library (no workflow) or a
// code node's files.
type scope struct {
	WorkspaceID string
	WorkflowID  string // "" for the library
	NodeKey     string
}

func (s scope) library() bool { return s.WorkflowID == "" }

// what names the set in messages.
func (s scope) what() string {
	if s.library() {
		return "the code library"
	}
	return "code node " + s.NodeKey
}
