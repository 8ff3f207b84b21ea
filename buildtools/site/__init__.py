"""What csi-web ships, made from this checkout: dist/ (``assemble``: the page, the worker, vendored
runtimes, wheels, models and the offline manifest), the static servers for it (``serve``), the npm
package (``pack``, with ``package_files/``) and a Vite app made with that package (``npm_app``)."""
