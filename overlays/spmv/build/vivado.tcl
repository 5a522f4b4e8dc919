# vivado.tcl - block design: Zynq PS + the spmv IP (control on M_AXI_GP0/HPM0, masters on an
# HP port), synthesized to a bitstream plus the .hwh PYNQ reads its register map from.
#   vivado -mode batch -source vivado.tcl -tclargs <board> <part> <board_part> <ip zip> <outdir>
# Clock: 100 MHz PL clock (= clock_mhz in ../overlay.toml); IP cell name spmv_0 (= ip_instance).
set board      [lindex $argv 0]
set part       [lindex $argv 1]
set board_part [lindex $argv 2]
set ip_zip     [lindex $argv 3]
set outdir     [lindex $argv 4]
set pl_clock_mhz 100

create_project -force vivado_$board ./vivado_$board -part $part
set_property board_part $board_part [current_project]
file mkdir ./ip_repo_$board
exec unzip -o $ip_zip -d ./ip_repo_$board
set_property ip_repo_paths ./ip_repo_$board [current_project]
update_ip_catalog

create_bd_design spmv_bd
if {$board eq "pynq-z2"} {
    set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:processing_system7 ps]
    apply_bd_automation -rule xilinx.com:bd_rule:processing_system7 \
        -config {make_external "FIXED_IO, DDR" apply_board_preset "1"} $ps
    set_property -dict [list CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ $pl_clock_mhz \
        CONFIG.PCW_USE_S_AXI_HP0 {1}] $ps
    set clk ps/FCLK_CLK0
    set hp  ps/S_AXI_HP0
    set gp  ps/M_AXI_GP0
} else {
    set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:zynq_ultra_ps_e ps]
    apply_bd_automation -rule xilinx.com:bd_rule:zynq_ultra_ps_e \
        -config {apply_board_preset "1"} $ps
    set_property -dict [list CONFIG.PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ $pl_clock_mhz \
        CONFIG.PSU__USE__S_AXI_GP2 {1} CONFIG.PSU__USE__M_AXI_GP1 {0}] $ps
    set clk ps/pl_clk0
    set hp  ps/S_AXI_HP0_FPD
    set gp  ps/M_AXI_HPM0_FPD
}

create_bd_cell -type ip -vlnv hetlab.org:hls:spmv:1.0 spmv_0
apply_bd_automation -rule xilinx.com:bd_rule:axi4 \
    -config [list Clk_master $clk Clk_slave Auto Clk_xbar Auto Master /$gp Slave /spmv_0/s_axi_control] \
    [get_bd_intf_pins spmv_0/s_axi_control]
foreach port {m_axi_gmem0 m_axi_gmem1 m_axi_gmem2 m_axi_gmem3 m_axi_gmem4} {
    apply_bd_automation -rule xilinx.com:bd_rule:axi4 \
        -config [list Clk_master Auto Clk_slave $clk Clk_xbar Auto Master /spmv_0/$port Slave /$hp] \
        [get_bd_intf_pins $hp]
}
validate_bd_design
save_bd_design

make_wrapper -files [get_files spmv_bd.bd] -top
add_files -norecurse [glob ./vivado_$board/vivado_$board.gen/sources_1/bd/spmv_bd/hdl/spmv_bd_wrapper.v]
set_property top spmv_bd_wrapper [current_fileset]
launch_runs impl_1 -to_step write_bitstream -jobs 4
wait_on_run impl_1

file copy -force ./vivado_$board/vivado_$board.runs/impl_1/spmv_bd_wrapper.bit $outdir/spmv.bit
file copy -force ./vivado_$board/vivado_$board.gen/sources_1/bd/spmv_bd/hw_handoff/spmv_bd.hwh $outdir/spmv.hwh
exit
