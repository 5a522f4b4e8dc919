# hls.tcl - Vitis HLS: C-simulate, synthesize and export the spmv kernel as a Vivado IP.
#   vitis_hls -f hls.tcl -tclargs <part> <clock period ns> <board> <csim|ip>
# The VLNV below must equal [overlay] vlnv in ../overlay.toml (a test checks).
set part   [lindex $argv 0]
set period [lindex $argv 1]
set board  [lindex $argv 2]
set what   [lindex $argv 3]

open_project -reset hls_$board
set_top spmv
add_files ../hls/spmv.cpp -cflags "-ffp-contract=off"
add_files ../hls/spmv.h
add_files -tb ../hls/spmv_tb.cpp -cflags "-ffp-contract=off"
open_solution -reset solution1 -flow_target vivado
set_part $part
create_clock -period $period -name default
# keep the 32-bit m_axi ports as written (the timing model assumes 32-bit beats)
config_interface -m_axi_max_widen_bitwidth 0
# no fused multiply-add: each product is rounded before the row sum (hls/spmv.cpp)
config_op fmadd -impl none
config_op fmacc -impl none

csim_design
if {$what eq "csim"} { exit }
csynth_design
export_design -format ip_catalog -vendor hetlab.org -library hls -ipname spmv -version 1.0
exit
