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
# repeats_fetch DIR     downloads desktop-base, gnome-backgrounds and
#                        librsvg2-bin into DIR and unpacks them; sets
#                        rep_refs and rep_negs to illustrations of repeated
#                        shapes, stripes and long parallel curves (the SVGs
#                        rasterised at 3840 pixels wide with the unpacked
#                        rsvg-convert, the WebPs converted to PNG by OpenCV)
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
repeats_fetch() {
    wp_dir=$1
    (cd "$wp_dir" && apt-get download desktop-base gnome-backgrounds librsvg2-bin >/dev/null 2>&1 ||
        { apt-get update >/dev/null && apt-get download desktop-base gnome-backgrounds librsvg2-bin >/dev/null; })
    for d in "$wp_dir"/*.deb; do dpkg -x "$d" "$wp_dir/x"; done
    mkdir -p "$wp_dir/src"
    local x=$wp_dir/x svg=$wp_dir/x/usr/bin/rsvg-convert g=$wp_dir/x/usr/share/backgrounds/gnome
    local db=$wp_dir/x/usr/share/desktop-base n
    for n in softwaves emerald homeworld; do
        "$svg" "$db/$n-theme/wallpaper/contents/images/3840x2160.svg" -o "$wp_dir/src/$n.png"
    done
    /usr/bin/python3 - "$g" "$wp_dir/src" wood-l truchet-l symbolic-l licorice-l <<'PY'
import sys, cv2, os
g, out = sys.argv[1], sys.argv[2]
for n in sys.argv[3:]:
    cv2.imwrite(os.path.join(out, n + ".png"), cv2.imread(os.path.join(g, n + ".webp")))
PY
    for n in drool-l field-l; do
        "$svg" -w 3840 "$g/$n.svg" -o "$wp_dir/src/$n.png"
    done
    rep_refs=("$wp_dir/src/softwaves.png" "$wp_dir/src/wood-l.png" "$wp_dir/src/truchet-l.png"
              "$wp_dir/src/drool-l.png" "$wp_dir/src/emerald.png" "$wp_dir/src/homeworld.png")
    rep_negs=("$wp_dir/src/field-l.png" "$wp_dir/src/symbolic-l.png" "$wp_dir/src/licorice-l.png")
}
