// The body of the lsb_layer_check_* links (CMakeLists.txt): a layer's whole library is linked
// into this against only the libraries below it, so a call into a layer above is an undefined
// reference. Never run.
int main() { return 0; }
