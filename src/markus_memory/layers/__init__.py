"""The memory layers, one module each; a layer never imports another layer."""
