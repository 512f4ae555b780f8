#!/bin/bash
# make_test_videos.sh: regenerate the test videos in data/video (see
# data/README.md).  Needs /usr/bin/python3 with OpenCV (python3-opencv) and
# the ffmpeg program (Debian: ffmpeg); the tests themselves need neither.
#
# usage: tools/bench/make_test_videos.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
out=data/video
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ff() { ffmpeg -nostdin -loglevel error -y "$@"; }

# clip: a camera over the retina image, 320x180, 50 frames at 30 fps; frames
# 30..44 show the gravel image instead (expected: none).  The shared
# generator writes clip.mp4, clip.jsonl (ground truth) and ref_clip.jpg.
/usr/bin/python3 ../shared/bench/gen_video.py data/bench/ref_retina.jpg data/bench/ref_gravel.jpg \
    "$tmp" clip 320 180 50 3
mkdir -p "$out"
cp "$tmp/clip.jsonl" "$tmp/ref_clip.jpg" "$out/"
# moov first (faststart): the frame count is known before the data, so a cut
# file is recognisably truncated
ff -i "$tmp/clip.mp4" -c copy -movflags +faststart "$out/clip.mp4"

# the first 12 frames in other codecs and containers
ff -i "$out/clip.mp4" -frames:v 12 -c:v mpeg4 -q:v 3 "$out/clip_mpeg4.avi"
ff -i "$out/clip.mp4" -frames:v 12 -c:v mjpeg -q:v 3 "$out/clip_mjpeg.mov"
ff -i "$out/clip.mp4" -frames:v 12 -c:v libx264 -crf 23 "$out/clip_h264.ts"
ff -i "$out/clip.mp4" -frames:v 12 -c:v libx265 -crf 28 -x265-params log-level=error "$out/clip_hevc.mkv"
ff -i "$out/clip.mp4" -frames:v 12 -c:v libvpx-vp9 -b:v 0 -crf 35 "$out/clip_vp9.webm"
ff -i "$out/clip.mp4" -frames:v 12 -c:v libaom-av1 -crf 35 -cpu-used 8 "$out/clip_av1.mkv"

# a size change mid-stream: frames 0..5 at 320x180, 6..11 at 256x144 (same
# picture scaled), one MPEG-TS stream with continuous timestamps
ff -i "$out/clip.mp4" -frames:v 6 -c:v libx264 -bf 0 -crf 23 "$tmp/a.ts"
ff -ss 0.2 -i "$out/clip.mp4" -frames:v 6 -vf scale=256:144 -c:v libx264 -bf 0 -crf 23 \
   -output_ts_offset 0.2 "$tmp/b.ts"
cat "$tmp/a.ts" "$tmp/b.ts" > "$out/sizes.ts"

# a video track and no frame; the query as a TIFF (tests/cli/damage.sh)
ff -f lavfi -i color=c=gray:s=64x48:r=25 -frames:v 0 -c:v mpeg4 "$out/zero_frames.mkv"
ff -i data/query.jpg -pix_fmt gray -compression_algo deflate data/query.tiff
# frames whose header says 16384x16384: a 320x256 H.264 stream whose
# Matroska PixelWidth and PixelHeight are rewritten (refused at open)
ff -f lavfi -i color=c=gray:s=320x256:r=5 -frames:v 2 -c:v libx264 -preset ultrafast "$tmp/k.mkv"
python3 - "$tmp/k.mkv" "$out/huge_16k.mkv" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
for elem in (bytes([0xB0, 0x82, 0x01, 0x40]), bytes([0xBA, 0x82, 0x01, 0x00])):
    i = b.index(elem)
    b[i + 2:i + 4] = bytes([0x40, 0x00])
open(sys.argv[2], "wb").write(b)
PY
ls -l "$out"
