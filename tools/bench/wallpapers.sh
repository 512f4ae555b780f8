# wallpapers.sh: sourced by the calibration scripts (calibrate_photo.sh,
# calibrate_scene.sh).  Images that the public benches do not use, from
# Debian's wallpaper packages, downloaded and unpacked in a temporary folder
# (apt-get download: nothing is installed).
#
# wallpapers_setup NAME  a temporary folder in tmp (kept and named when KEEP
#                        is set, else removed on exit), then wallpapers_fetch
# wallpapers_fetch DIR   downloads plasma-workspace-wallpapers and
#                        ukui-wallpapers into DIR and unpacks them; sets w
#                        (the wallpapers' folder) and b (the backgrounds')
# named FILE...          copies each into DIR/src under a unique name (the
#                        wallpapers are all called 5120x2880.jpg and the
#                        like; the generators name queries after their
#                        source) and prints the copies' paths
wallpapers_setup() {
    tmp=$(mktemp -d)
    if [ -n "${KEEP:-}" ]; then echo "$1: keeping $tmp"; else trap 'rm -rf "$tmp"' EXIT; fi
    wallpapers_fetch "$tmp"
}
wallpapers_fetch() {
    wp_dir=$1
    (cd "$wp_dir" && apt-get download plasma-workspace-wallpapers ukui-wallpapers >/dev/null 2>&1 ||
        { apt-get update >/dev/null && apt-get download plasma-workspace-wallpapers ukui-wallpapers >/dev/null; })
    for d in "$wp_dir"/*.deb; do dpkg -x "$d" "$wp_dir/x"; done
    w=$wp_dir/x/usr/share/wallpapers b=$wp_dir/x/usr/share/backgrounds
    mkdir -p "$wp_dir/src"
}
named() {
    local f n
    for f in "$@"; do
        n=${f#"$w"/}; n=${n#"$b"/}; n=${n%%/*}; n=${n%.*}
        cp "$f" "$wp_dir/src/$n.${f##*.}"
        echo "$wp_dir/src/$n.${f##*.}"
    done
}
