"""What csi-web ships, made from this checkout: dist/ (``assemble``: the page, the worker, vendored
runtimes, wheels, models and the offline manifest), the browser wheel of py/csi (``csi_wheel``), the
static servers for dist/ (``serve``), the npm package (``pack``, with ``package_files/``) and a Vite
app made with that package (``npm_app``)."""
