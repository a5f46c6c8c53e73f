package worker

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"slipway/internal/workport"
)

// collect reads the files a script left under c.Dir of its working
// directory, bounded by c's limits. What a script leaves is untrusted: the
// directory is opened confined to the working directory (os.Root: no "..",
// no symlink leading out), and only regular files are read — a symlink, a
// device or a FIFO is refused, so nothing of the worker's machine comes
// back with the result.
func collect(work string, c *workport.Collect) ([]workport.ScriptFile, error) {
	dir := path.Clean(c.Dir)
	if !filepath.IsLocal(filepath.FromSlash(dir)) {
		return nil, fmt.Errorf("the output directory %q leaves the working directory", c.Dir)
	}
	root, err := os.OpenRoot(work)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if st, err := root.Lstat(filepath.FromSlash(dir)); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("the build left no directory %s", c.Dir)
	}
	out, err := root.OpenRoot(filepath.FromSlash(dir))
	if err != nil {
		return nil, fmt.Errorf("the build's directory %s: %w", c.Dir, err)
	}
	defer out.Close()
	var files []workport.ScriptFile
	var total int64
	err = fs.WalkDir(out.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file (symlinks and special files are refused)", p)
		}
		if len(files) >= c.MaxFiles {
			return fmt.Errorf("more than %d files", c.MaxFiles)
		}
		content, err := readBounded(out, p, c.MaxFileBytes)
		if err != nil {
			return err
		}
		if total += int64(len(content)); total > c.MaxTotalBytes {
			return fmt.Errorf("more than %d bytes together", c.MaxTotalBytes)
		}
		files = append(files, workport.ScriptFile{Path: p, Content: content})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the build's output (%s): %w", c.Dir, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// readBounded reads one regular file of root, at most max bytes.
func readBounded(root *os.Root, p string, max int64) ([]byte, error) {
	f, err := root.OpenFile(filepath.FromSlash(p), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, max)
	}
	return b, nil
}
