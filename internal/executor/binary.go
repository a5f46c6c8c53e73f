package executor

import "debug/elf"

// StaticBinary reports an ELF executable without a dynamic loader: one
// that runs inside any agent container (the built-in agent is mounted in).
func StaticBinary(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}
