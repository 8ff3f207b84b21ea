"""Offline build tooling for csi-web (site assembly, wheels, model folders)."""
