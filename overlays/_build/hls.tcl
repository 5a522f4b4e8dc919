# hls.tcl - Vitis HLS: C-simulate, synthesize and export an overlay's kernel as a Vivado IP.
#   cd overlays/<name>/build && vitis_hls -f ../../_build/hls.tcl -tclargs <board> <csim|ip>
# Shared by every overlay: top, sources, cflags, VLNV, part and clock come from overlay.tcl in
# the current folder, written from overlay.toml by `python -m hetlab.fpga.buildgen`.
set board [lindex $argv 0]
set what  [lindex $argv 1]
source overlay.tcl
if {![info exists part($board)]} { error "board must be one of $boards; got $board" }
lassign [split $vlnv :] vendor library ipname version

open_project -reset hls_$board
set_top $top
foreach src $hls_sources { add_files $src -cflags $hls_cflags }
foreach hdr $hls_headers { add_files $hdr }
add_files -tb $testbench -cflags $hls_cflags
open_solution -reset solution1 -flow_target vivado
set_part $part($board)
create_clock -period $clock_period_ns($board) -name default
# keep the m_axi ports as wide as the kernel's pointers (the timing model's [m_axi] data_bits)
config_interface -m_axi_max_widen_bitwidth 0
# no fused multiply-add: every overlay's float path rounds in the order its .cpp header states,
# as hetlab/kernels/<family>/fpga.py (*_f32) reproduces it (the C-simulation gets -ffp-contract=off likewise)
config_op fmadd -impl none
config_op fmacc -impl none

csim_design
if {$what eq "csim"} { exit }
csynth_design
export_design -format ip_catalog -vendor $vendor -library $library -ipname $ipname -version $version
exit
