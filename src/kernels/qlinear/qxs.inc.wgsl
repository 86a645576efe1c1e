// The staged x row of the quantized matrix-vector kernels (qgemv4's 'xs', qgemv_wide's 'wide-xs'), through
// `// #include "qlinear/qxs.inc.wgsl"` before qlinear/qunit.inc.wgsl: with XSH the includer writes the row, normalised
// with NORM, into xs (XSN >= K / 4 vec4s) once, and qunit's units read it there instead of from x4 (the same
// values). Never compiled on its own.
override XSH: bool = false;
override XSN: u32 = 1u;
var<workgroup> xs: array<vec4<f32>, XSN>;
