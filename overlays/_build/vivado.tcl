# vivado.tcl - block design: Zynq PS + an overlay's IP (control on M_AXI_GP0/HPM0, masters on an
# HP port), synthesized to a bitstream plus the .hwh PYNQ reads its register map from.
#   cd overlays/<name>/build && vivado -mode batch -source ../../_build/vivado.tcl \
#       -tclargs <board> <ip zip>
# Shared by every overlay: part, board part, PL clock (clock_mhz), VLNV, IP cell name
# (ip_instance), m_axi ports and result paths come from overlay.tcl in the current folder,
# written from overlay.toml by `python -m hetlab.fpga.buildgen`.
set board  [lindex $argv 0]
set ip_zip [lindex $argv 1]
source overlay.tcl
if {![info exists part($board)]} { error "board must be one of $boards; got $board" }
set bd ${name}_bd

create_project -force vivado_$board ./vivado_$board -part $part($board)
set_property board_part $board_part($board) [current_project]
file mkdir ./ip_repo_$board
exec unzip -o $ip_zip -d ./ip_repo_$board
set_property ip_repo_paths ./ip_repo_$board [current_project]
update_ip_catalog

create_bd_design $bd
if {[string match xc7z* $part($board)]} {
    # Zynq-7000 (PYNQ-Z1/Z2): processing_system7, PL clock FCLK_CLK0
    set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:processing_system7 ps]
    apply_bd_automation -rule xilinx.com:bd_rule:processing_system7 \
        -config {make_external "FIXED_IO, DDR" apply_board_preset "1"} $ps
    set_property -dict [list CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ $clock_mhz($board) \
        CONFIG.PCW_USE_S_AXI_HP0 {1}] $ps
    set clk ps/FCLK_CLK0
    set hp  ps/S_AXI_HP0
    set gp  ps/M_AXI_GP0
} else {
    # Zynq UltraScale+ (Kria K26): zynq_ultra_ps_e, PL clock pl_clk0
    set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:zynq_ultra_ps_e ps]
    apply_bd_automation -rule xilinx.com:bd_rule:zynq_ultra_ps_e \
        -config {apply_board_preset "1"} $ps
    set_property -dict [list CONFIG.PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ $clock_mhz($board) \
        CONFIG.PSU__USE__S_AXI_GP2 {1} CONFIG.PSU__USE__M_AXI_GP1 {0}] $ps
    set clk ps/pl_clk0
    set hp  ps/S_AXI_HP0_FPD
    set gp  ps/M_AXI_HPM0_FPD
}

create_bd_cell -type ip -vlnv $vlnv $ip_instance
apply_bd_automation -rule xilinx.com:bd_rule:axi4 \
    -config [list Clk_master $clk Clk_slave Auto Clk_xbar Auto Master /$gp \
        Slave /$ip_instance/s_axi_control] \
    [get_bd_intf_pins $ip_instance/s_axi_control]
foreach port $m_axi_ports {
    apply_bd_automation -rule xilinx.com:bd_rule:axi4 \
        -config [list Clk_master Auto Clk_slave $clk Clk_xbar Auto Master /$ip_instance/$port \
            Slave /$hp] \
        [get_bd_intf_pins $hp]
}
validate_bd_design
save_bd_design

set gen ./vivado_$board/vivado_$board.gen/sources_1/bd/$bd
make_wrapper -files [get_files $bd.bd] -top
add_files -norecurse [glob $gen/hdl/${bd}_wrapper.v]
set_property top ${bd}_wrapper [current_fileset]
launch_runs impl_1 -to_step write_bitstream -jobs 4
wait_on_run impl_1

file mkdir [file dirname $bitstream($board)]
file copy -force ./vivado_$board/vivado_$board.runs/impl_1/${bd}_wrapper.bit $bitstream($board)
file copy -force $gen/hw_handoff/$bd.hwh $hwh($board)
exit
