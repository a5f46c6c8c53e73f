import { defineConfig } from 'vite'
import react from '@vitejs/plugin-react'

// The built console is committed (dist/) and embedded in the binary; CI
// rebuilds it from package-lock.json and fails when it differs.
export default defineConfig({
  plugins: [react()],
  base: '/',
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 1024,
    rollupOptions: {
      output: {
        // React changes rarely: its own chunk stays cached across console
        // releases. Everything else, the component library included, splits
        // along the lazy pages: a Mantine component only a settings or
        // workflow page uses loads with that page, not with the sign-in
        // form (bench/README.md, "The console's first load").
        manualChunks(id: string) {
          if (/node_modules\/(react|react-dom|react-router|react-router-dom|scheduler)\//.test(id)) return 'react'
          return undefined
        },
      },
    },
  },
  server: {
    proxy: {
      '/api': { target: 'http://localhost:8080', ws: true },
      '/organization': 'http://localhost:8080',
    },
  },
})
