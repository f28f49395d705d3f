"""Monitor page (placeholder until its issue lands)."""

import streamlit as st

st.title("Monitor")
st.info("This page is being built.")
