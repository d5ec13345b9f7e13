import { defineConfig } from "vite";

// The dashboard is static files served by wavecrest-server --http_static_dir; during development
// `WAVECREST_HTTP=http://127.0.0.1:PORT npx vite` proxies the API to a running server.
export default defineConfig({
  base: "./",
  build: { outDir: "dist", emptyOutDir: true, sourcemap: true },
  server: {
    proxy: process.env.WAVECREST_HTTP ? { "/v1": process.env.WAVECREST_HTTP } : undefined,
  },
});
