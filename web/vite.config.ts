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
        // React and the component library change rarely: their own chunks
        // stay cached across console releases. The rest (the canvas among
        // it) splits along the lazy pages.
        manualChunks(id: string) {
          if (id.includes('@mantine')) return 'ui'
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
