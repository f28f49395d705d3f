"""ShardScope core: pure Python (no streamlit) layout maths, design files, codegen, launch and logs."""
