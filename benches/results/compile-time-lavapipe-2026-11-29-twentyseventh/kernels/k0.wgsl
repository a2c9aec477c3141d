struct P { which: u32, form: u32, team: u32, dest: u32, source: u32, n: u32, root: u32, dst: u32, sst: u32 }
var<immediate> p: P;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let a = p;
    var r = 0;
    if a.form == 0u {
        if li == 0u {
            switch a.which {
                case 0u: { r = shmem_broadcastmem(a.team, a.dest, a.source, a.n, a.root); }
                default: { }
            }
        }
    }
}
