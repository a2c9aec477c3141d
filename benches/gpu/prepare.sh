#!/bin/sh
# Prepares a device-machine run (see README.md): release binaries stripped into
# .gpu/, the Vulkan loader and libglvnd (NVIDIA's ICD, libGLX_nvidia, needs it)
# as .debs in .gl/, both ignored by git and named in the run's `carry`.
# Run from the repository root on the CPU machine.
set -e
grep -qx '/.gl/' .git/info/exclude || echo /.gl/ >> .git/info/exclude
grep -qx '/.gpu/' .git/info/exclude || echo /.gpu/ >> .git/info/exclude
mkdir -p .gl .gpu /tmp/amd64/partial
if ! ls .gl/libglx0_*.deb > /dev/null 2>&1; then
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  apt-get $o update > /dev/null
  (cd .gl && apt-get $o download libvulkan1 libglvnd0 libglx0 libgl1 libegl1 libopengl0 libgles2)
fi
cargo build --release --workspace --bins --examples
for b in vkshmrun vkshmem-bench; do cp target/release/$b .gpu/; done
# Only what run.sh runs: the run tool carries at most 64 MiB with the tree.
cp target/release/examples/copy_shapes .gpu/
strip .gpu/vkshmrun .gpu/vkshmem-bench .gpu/copy_shapes
cp benches/gpu/run.sh benches/gpu/torch_copy.py benches/gpu/mixes.cu .gpu/
du -sh .gpu .gl
