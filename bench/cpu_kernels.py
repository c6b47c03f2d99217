"""KIR kernels the CPU benchmark needs beyond ir_samples/ (f32 row sum, Philox uniform,
a row-parallel matmul)."""

ROW_SUM = """kernel @row_sum(%x: view<f32, [%M, %N], in>, %y: view<f32, [%M], out>) {
  parallel %M {
  ^row(%i: index):
    %cols = iota : tensor<index, [%N]>
    %v = read %x index(%i, %cols) : tensor<f32, [%N]>
    %s = reduce %v {axes = [0], kind = sum} : f32
    write %y, %s index(%i)
  }
}"""

UNIFORM = """kernel @uniform(%seed: u64, %y: view<f32, [%N], out>) {
  %c1023 = constant {value = 1023} : index
  %c1024 = constant {value = 1024} : index
  %padded = add %N, %c1023 : index
  %nblocks = floordiv %padded, %c1024 : index
  parallel %nblocks {
  ^block(%b: index):
    %base = mul %b, %c1024 : index
    %lane = iota : tensor<index, [1024]>
    %base_b = broadcast %base : tensor<index, [1024]>
    %offs = add %base_b, %lane : tensor<index, [1024]>
    %n_b = broadcast %N : tensor<index, [1024]>
    %inb = lt %offs, %n_b : tensor<bool, [1024]>
    %u = uniform %seed, %offs : tensor<f32, [1024]>
    write %y, %u index(%offs) mask(%inb)
  }
}"""

MATMUL = """kernel @matmul(%a: view<f32, [%M, %K], in>, %b: view<f32, [%K, %N], in>, %c: view<f32, [%M, %N], out>) {
  %kk = iota : tensor<index, [%K]>
  %nn = iota : tensor<index, [%N]>
  %kk2 = broadcast %kk {dims = [0]} : tensor<index, [%K, %N]>
  %nn2 = broadcast %nn {dims = [1]} : tensor<index, [%K, %N]>
  %bt = read %b index(%kk2, %nn2) : tensor<f32, [%K, %N]>
  parallel %M {
  ^row(%i: index):
    %ar = read %a index(%i, %kk) : tensor<f32, [%K]>
    %cr = vecmat %ar, %bt {acc = f32} : tensor<f32, [%N]>
    write %c, %cr index(%i, %nn)
  }
}"""
