import type { Plugin } from "vite";

/**
 * csi-web's Vite plugin: copies csi-web's runtime into the build (`<outDir>/<dir>/`, default
 * "csi-web") and tells the engine where it is; with `serviceWorker` (default true) also writes
 * csi-web's service worker as `<outDir>/sw.js`.
 */
export default function csiWeb(options?: { dir?: string; serviceWorker?: boolean }): Plugin;
